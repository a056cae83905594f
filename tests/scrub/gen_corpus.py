#!/usr/bin/env python3
"""Deterministic generator of the labelled secret-scrubbing corpus (bench/scrub/run.sh).

Writes into OUT_DIR:
  labelled/NNNN-<kind>.<ext>  realistic files (.env, JSON, YAML, source code, shell history, logs,
                              stack traces) with planted secrets and hard negatives
  labels.json                 per file: secrets [{start,end,rule,kind}] and negatives
                              [{start,end,kind}] (byte offsets; the corpus is ASCII so they equal
                              JS string offsets). A secret's kind is its rule id, or
                              "<rule>:<context>" for the kinds that score.py reports one by one
                              (FAMILIES and CONTEXTUAL below)
  clean/NNNN.txt              the same kinds of files with no secrets (throughput on clean text)
  dense/NNNN.txt              secret-dense files (about one secret per KB: a config/.env dump)
  very-dense/NNNN.txt         extreme density (a secret on most lines, one per ~100 bytes)

Usage: gen_corpus.py OUT_DIR [--files N] [--clean-mb M] [--dense-mb M] [--seed S]
Same arguments -> byte-identical output.
"""
import argparse
import base64
import json
import os
import random

ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
AWS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
DIGITS = "0123456789"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"

rng = random.Random(1)


def r(alpha, n):
    return "".join(rng.choice(alpha) for _ in range(n))


def password():
    words = ["Summer", "Tiger", "Blue", "Rocket", "Coffee", "Purple", "Winter", "Falcon", "Maple"]
    style = rng.randrange(3)
    if style == 0:
        return rng.choice(words) + rng.choice(words) + str(rng.randrange(10, 9999)) + rng.choice("!#$%&*")
    if style == 1:
        return r(ALNUM, rng.randrange(12, 24)) + str(rng.randrange(10))
    return r(ALNUM + "!@#%^&*-_", rng.randrange(14, 28)) + str(rng.randrange(10))


# Secret makers: rule id -> (list of realistic key names, value generator).
KEYED = {
    "aws-access-key-id": (["AWS_ACCESS_KEY_ID", "aws_access_key_id", "accessKeyId"],
                          lambda: rng.choice(["AKIA", "ASIA"]) + r(AWS, 16)),
    "aws-secret-access-key": (["AWS_SECRET_ACCESS_KEY", "aws_secret_access_key", "awsSecretKey"],
                              lambda: r(B64, 40)),
    "gcp-api-key": (["GOOGLE_API_KEY", "GEMINI_API_KEY", "mapsKey"], lambda: "AIza" + r(URLSAFE, 35)),
    "gcp-oauth-client-secret": (["GOOGLE_CLIENT_SECRET", "client_secret"],
                                lambda: "GOCSPX-" + r(URLSAFE, 28)),
    "gcp-oauth-access-token": (["GOOGLE_ACCESS_TOKEN", "gcloud_token"],
                               lambda: "ya29." + r(URLSAFE, rng.randrange(100, 180))),
    "azure-ad-client-secret": (["AZURE_CLIENT_SECRET", "clientSecret"],
                               lambda: r(ALNUM, 3) + rng.choice(DIGITS) + "Q~" + r(ALNUM + "_~.-", 34)),
    "digitalocean-token": (["DIGITALOCEAN_TOKEN", "do_token"], lambda: "dop_v1_" + r(HEX, 64)),
    "hashicorp-vault-token": (["VAULT_TOKEN", "vault_token"], lambda: "hvs." + r(URLSAFE, 95)),
    "github-pat": (["GITHUB_TOKEN", "GH_TOKEN", "github_token"], lambda: "ghp_" + r(ALNUM, 36)),
    "github-fine-grained-pat": (["GITHUB_TOKEN", "GH_PAT"],
                                lambda: "github_pat_" + r(ALNUM, 22) + "_" + r(ALNUM, 59)),
    "github-oauth-token": (["GH_OAUTH", "oauth_token"], lambda: "gho_" + r(ALNUM, 36)),
    "github-app-token": (["GH_INSTALLATION", "app_token"], lambda: rng.choice(["ghs_", "ghu_"]) + r(ALNUM, 36)),
    "github-refresh-token": (["GH_REFRESH", "refresh_token"], lambda: "ghr_" + r(ALNUM, 76)),
    "gitlab-pat": (["GITLAB_TOKEN", "CI_JOB_PAT", "private_token"], lambda: "glpat-" + r(URLSAFE, 20)),
    "gitlab-pipeline-trigger-token": (["TRIGGER_TOKEN"], lambda: "glptt-" + r(HEX, 40)),
    "gitlab-runner-token": (["RUNNER_TOKEN", "runner_token"], lambda: "glrt-" + r(URLSAFE, 20)),
    "gitlab-deploy-token": (["DEPLOY_TOKEN"], lambda: "gldt-" + r(URLSAFE, 20)),
    "slack-token": (["SLACK_BOT_TOKEN", "slackToken", "SLACK_TOKEN"],
                    lambda: rng.choice(["xoxb-", "xoxp-"]) + r(DIGITS, 12) + "-" + r(DIGITS, 13) + "-" + r(ALNUM, 24)),
    "discord-bot-token": (["DISCORD_BOT_TOKEN", "discord_token"],
                          lambda: rng.choice("MNO") + r(URLSAFE, 23) + "." + r(URLSAFE, 6) + "." + r(URLSAFE, 27)),
    "telegram-bot-token": (["TELEGRAM_BOT_TOKEN", "tg_token"],
                           lambda: r(DIGITS, 9) + ":AA" + r(URLSAFE, 33)),
    "stripe-api-key": (["STRIPE_SECRET_KEY", "stripe_key", "STRIPE_API_KEY"],
                       lambda: rng.choice(["sk_live_", "sk_test_", "rk_live_"]) + r(ALNUM, rng.choice([24, 99]))),
    "stripe-webhook-secret": (["STRIPE_WEBHOOK_SECRET", "endpoint_secret"], lambda: "whsec_" + r(ALNUM, 32)),
    "square-access-token": (["SQUARE_ACCESS_TOKEN"], lambda: "EAAA" + r(URLSAFE, 60)),
    "paypal-braintree-access-token": (["BRAINTREE_TOKEN", "PAYPAL_ACCESS_TOKEN"],
                                      lambda: "access_token$production$" + r("abcdefghijklmnopqrstuvwxyz0123456789", 16) + "$" + r(HEX, 32)),
    "paypal-client-secret": (["PAYPAL_CLIENT_SECRET", "paypal_secret", "BRAINTREE_PRIVATE_KEY"],
                             lambda: r(URLSAFE, 80)),
    "openai-api-key": (["OPENAI_API_KEY", "openai_key"],
                       lambda: rng.choice(["sk-proj-" + r(URLSAFE, 74) + "T3BlbkFJ" + r(URLSAFE, 74),
                                           "sk-" + r(ALNUM, 20) + "T3BlbkFJ" + r(ALNUM, 20)])),
    "anthropic-api-key": (["ANTHROPIC_API_KEY", "anthropic_key"], lambda: "sk-ant-api03-" + r(URLSAFE, 93) + "AA"),
    "huggingface-token": (["HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"], lambda: "hf_" + r(LETTERS, 34)),
    "cohere-api-key": (["COHERE_API_KEY", "CO_API_KEY", "cohere_key"], lambda: r(ALNUM, 40)),
    "groq-api-key": (["GROQ_API_KEY"], lambda: "gsk_" + r(ALNUM, 52)),
    "replicate-api-token": (["REPLICATE_API_TOKEN"], lambda: "r8_" + r(ALNUM, 37)),
    "perplexity-api-key": (["PERPLEXITY_API_KEY", "PPLX_KEY"], lambda: "pplx-" + r(ALNUM, 48)),
    "xai-api-key": (["XAI_API_KEY"], lambda: "xai-" + r(ALNUM, 80)),
    "mistral-api-key": (["MISTRAL_API_KEY", "mistral_key", "TOGETHER_API_KEY"], lambda: r(ALNUM, 32)),
    "sendgrid-api-key": (["SENDGRID_API_KEY", "sendgrid_key"], lambda: "SG." + r(URLSAFE, 22) + "." + r(URLSAFE, 43)),
    "mailgun-api-key": (["MAILGUN_API_KEY", "mailgun_key"], lambda: "key-" + r(HEX, 32)),
    "twilio-api-key": (["TWILIO_API_KEY", "TWILIO_AUTH_TOKEN"], None),  # special below
    "npm-access-token": (["NPM_TOKEN", "npm_token"], lambda: "npm_" + r(ALNUM, 36)),
    "pypi-upload-token": (["PYPI_TOKEN", "TWINE_PASSWORD"], lambda: "pypi-AgEIcHlwaS5vcmc" + r(URLSAFE, 70)),
    "shopify-token": (["SHOPIFY_ACCESS_TOKEN"], lambda: "shpat_" + r(HEX, 32)),
    "linear-api-key": (["LINEAR_API_KEY"], lambda: "lin_api_" + r(ALNUM, 40)),
    "age-secret-key": (["AGE_KEY", "SOPS_AGE_KEY"], lambda: "AGE-SECRET-KEY-1" + r(BECH32, 58)),
    "jwt": (["ID_TOKEN", "jwt", "session_token"],
            lambda: "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." +
            base64.urlsafe_b64encode(json.dumps({"sub": r(DIGITS, 10), "name": r(LETTERS, 8), "iat": rng.randrange(1600000000, 1800000000)}).encode()).decode().rstrip("=") +
            "." + r(URLSAFE, 43)),
    "generic-password": (["DB_PASSWORD", "password", "SMTP_PASSWORD", "admin_password", "redisPassword"], password),
    "generic-secret": (["SESSION_SECRET", "JWT_SECRET", "api_key", "SECRET_KEY", "ACCESS_TOKEN", "client_secret", "webhookSecret"],
                       lambda: r(ALNUM, rng.randrange(24, 64))),
}


def api_key():
    return r(ALNUM, rng.randrange(24, 48))


def azure_storage_key():
    return r(B64, 86) + "=="


def basic_credentials():
    user = rng.choice(["deploy", "ci-bot", "svc_backup", "admin", "grafana"])
    return base64.b64encode(f"{user}:{password()}".encode()).decode()


# Key-name families: kind -> (rule id, key names, value generator). Planted with assign() in every
# style (.env, export, JSON, YAML, Python, JS, Go, logs, escaped JSON) like KEYED, but labelled
# with their own kind so that score.py reports recall on each family.
FAMILIES = {
    "azure-storage-account-key:key-name": (
        "azure-storage-account-key",
        ["AZURE_STORAGE_KEY", "AZURE_STORAGE_ACCOUNT_KEY", "STORAGE_ACCOUNT_KEY", "accountKey",
         "storage_account_key", "storageKey", "BLOB_ACCOUNT_KEY"], azure_storage_key),
    "generic-password:password-family": (
        "generic-password",
        ["DB_PASS", "admin_pass", "passwd", "pwd", "PGPASSWORD", "MYSQL_PWD", "passphrase",
         "db_pass", "SMTP_PASS", "REDIS_PASSWORD", "dbPass", "mysql_root_password"], password),
    "generic-secret:api-key-family": (
        "generic-secret",
        ["api_key", "apikey", "apiKey", "access_key", "auth_key", "client_secret", "app_secret",
         "secret_key", "auth_token", "access_token", "private_token", "X_API_KEY"],
        api_key),
}


def plant_contextual(doc, kind):
    """Secrets of the families above in contexts that assign() does not write: connection
    strings, shell history, request logs, HTTP dumps, code that builds headers."""
    rule = kind.split(":")[0]
    host = rng.choice(["api.acme.io", "billing.corp.io", "internal.svc.cluster.local"])
    if kind == "azure-storage-account-key:cli":
        doc.t(f"$ az storage blob upload --account-name {rng.choice(['prodstore', 'backups01'])} --account-key ")
        doc.secret(azure_storage_key(), rule, kind)
        doc.t(f" -c {rng.choice(['backups', 'logs'])} -f {rng.choice(WORDS)}.tar.gz\n")
    elif kind == "azure-storage-account-key:conn-string-in-code":
        q = rng.choice(["'", '"'])
        doc.t(f"conn_str = {q}DefaultEndpointsProtocol=https;AccountName={rng.choice(['prodstore', 'media01'])};AccountKey=")
        doc.secret(azure_storage_key(), rule, kind)
        doc.t(f";EndpointSuffix=core.windows.net{q}\n")
    elif kind == "authorization-header:log":
        # An AWS secret access key sent as a bearer token, as an HTTP client's debug log shows it.
        doc.t(f"2026-11-{rng.randrange(10, 28)}T{rng.randrange(10, 23)}:{rng.randrange(10, 59)}:{rng.randrange(10, 59)}Z DEBUG "
              f"urllib3.connectionpool send: b'GET /v1/{rng.choice(WORDS)} HTTP/1.1\\r\\nHost: {host}\\r\\nAuthorization: Bearer ")
        doc.secret(r(B64, 40), rule, kind)
        doc.t("\\r\\n'\n")
    elif kind == "authorization-header:curl-verbose":
        doc.t(f"> GET /v2/{rng.choice(WORDS)} HTTP/1.1\n> Host: {host}\n> User-Agent: curl/8.5.0\n> Authorization: Basic ")
        doc.secret(basic_credentials(), rule, kind)
        doc.t("\n> Accept: */*\n>\n< HTTP/1.1 200 OK\n")
    elif kind == "authorization-header:json":
        doc.t(f'{{"method": "POST", "url": "https://{host}/v1/{rng.choice(WORDS)}", "headers": {{"Content-Type": "application/json", "Authorization": "Bearer ')
        doc.secret(r(ALNUM, rng.randrange(32, 56)), rule, kind)
        doc.t('"}}\n')
    elif kind == "authorization-header:python":
        scheme = rng.choice(["Bearer", "Token", "Basic"])
        value = basic_credentials() if scheme == "Basic" else r(ALNUM, rng.randrange(32, 48))
        doc.t(f"    resp = requests.get(f'https://{host}/v1/items', headers={{'Authorization': '{scheme} ")
        doc.secret(value, rule, kind)
        doc.t("'}, timeout=10)\n")
    elif kind == "authorization-header:escaped-json":
        doc.t('{"tool_result": "{\\"headers\\": {\\"Authorization\\": \\"Bearer ')
        doc.secret(r(URLSAFE, rng.randrange(32, 48)), rule, kind)
        doc.t('\\"}}"}\n')
    elif kind == "generic-password:connection-string":
        if rng.random() < 0.5:
            doc.t(f"  \"DefaultConnection\": \"Server=tcp:{rng.choice(['sql01', 'db.corp.io'])},1433;Database={rng.choice(['app', 'billing'])};User Id={rng.choice(['sa', 'app'])};Password=")
            doc.secret(password(), rule, kind)
            doc.t(";Encrypt=True;\",\n")
        else:
            doc.t(f"DSN=Driver={{ODBC Driver 18 for SQL Server}};Server={rng.choice(['sql01', 'db2'])};Uid=app;Pwd=")
            doc.secret(password(), rule, kind)
            doc.t(";\n")
    elif kind == "generic-password:shell":
        pw = password()
        form = rng.randrange(4)
        if form == 0:
            doc.t("$ PGPASSWORD=")
            doc.secret(pw, rule, kind)
            doc.t(f" psql -h {rng.choice(['db', '10.0.3.7'])} -U app -c 'select 1'\n")
        elif form == 1:
            doc.t("$ ./manage.py createsuperuser --username admin --password ")
            doc.secret(pw, rule, kind)
            doc.t(" --noinput\n")
        elif form == 2:
            doc.t("$ mysql -h db -u root -p'")
            doc.secret(pw, "cli-password", kind)
            doc.t("' app < dump.sql\n")
        else:
            doc.t("$ sshpass -p '")
            doc.secret(pw, "cli-password", kind)
            doc.t(f"' ssh deploy@{rng.choice(['10.0.0.4', 'bastion'])}\n")
    elif kind == "generic-password:log":
        doc.t(f"2026-11-{rng.randrange(10, 28)} {rng.randrange(10, 23)}:{rng.randrange(10, 59)}:{rng.randrange(10, 59)} WARN auth: login failed user={rng.choice(['bob', 'admin', 'svc'])} password=")
        doc.secret(password(), rule, kind)
        doc.t(f" ip=10.0.{rng.randrange(255)}.{rng.randrange(255)}\n")
    elif kind == "generic-secret:header-or-flag":
        form = rng.randrange(3)
        if form == 0:
            doc.t(f"$ curl -s -H 'X-Api-Key: ")
            doc.secret(api_key(), rule, kind)
            doc.t(f"' https://{host}/v1/{rng.choice(WORDS)}\n")
        elif form == 1:
            doc.t(f"$ acme-cli deploy --region eu-west-1 --api-key ")
            doc.secret(api_key(), rule, kind)
            doc.t(" --yes\n")
        else:
            doc.t(f"GET /v1/{rng.choice(WORDS)}?api_key=")
            doc.secret(api_key(), rule, kind)
            doc.t(f"&page={rng.randrange(1, 9)} HTTP/1.1\n")


CONTEXTUAL = ["azure-storage-account-key:cli", "azure-storage-account-key:conn-string-in-code",
              "authorization-header:log", "authorization-header:curl-verbose",
              "authorization-header:json", "authorization-header:python",
              "authorization-header:escaped-json", "generic-password:connection-string",
              "generic-password:shell", "generic-password:log", "generic-secret:header-or-flag"]

# Code that names credentials without holding one: identifiers, placeholders and lookups that the
# assignment rules must leave alone (each labelled as a hard negative of kind "code-identifier"
# or "code-placeholder").
CODE_NEGATIVES = [
    ("field_order = ['old_password', ", "'new_password1'", ", 'new_password2']\n", "code-identifier"),
    ("    fields = ('username', 'password', ", "'password_confirm2'", ")\n", "code-identifier"),
    ("url = base + '?refresh_token=", "oauth2_access_token", "&grant_type=refresh_token'\n", "code-identifier"),
    ("PRIVATE_KEY_TYPES = typing.Union[rsa.RSAPrivateKey, ", "ed25519.Ed25519PrivateKey", "]\n", "code-identifier"),
    ("    NL80211_ATTR_SAE_PASSWORD,\n    ", "NL80211_ATTR_TWT_RESPONDER", ",\n", "code-identifier"),
    (">>> urlparse('http://user:", "pass", "@example.com/path')\n", "code-placeholder"),
    ("    proxies = {'http': 'http://user:", "password123", "@proxy.example.com:3128'}\n", "code-placeholder"),
    ("TEST_DATABASE_URL = 'postgres://postgres:", "postgres", "@localhost:5432/test'\n", "code-placeholder"),
    ("$ curl -H \"Authorization: Bearer ", "$API_TOKEN", "\" https://api.acme.io/v1/me\n", "code-placeholder"),
    ("    headers = {'Authorization': f'Bearer ", "{token}", "'}\n", "code-placeholder"),
    ("    password = ", "os.environ['DB_PASSWORD']", "\n", "code-placeholder"),
    ("DB_PASS=", "${DB_PASS:-changeme}", "\n", "code-placeholder"),
    ("    self.client.login(username='admin', password=", "'admin1234'", ")\n", "code-placeholder"),
    ("PWD=", "/home/runner/work/app2", "\n", "code-placeholder"),
]


def plant_code_negative(doc):
    before, value, after, kind = rng.choice(CODE_NEGATIVES)
    doc.t(before)
    doc.neg(value, kind)
    doc.t(after)


class Doc:
    """Text under construction, with labelled spans."""

    def __init__(self):
        self.parts, self.n, self.secrets, self.negatives = [], 0, [], []

    def t(self, s):
        self.parts.append(s)
        self.n += len(s)

    def secret(self, s, rule, kind=None):
        self.secrets.append({"start": self.n, "end": self.n + len(s), "rule": rule,
                             "kind": kind or rule})
        self.t(s)

    def neg(self, s, kind):
        self.negatives.append({"start": self.n, "end": self.n + len(s), "kind": kind})
        self.t(s)

    def text(self):
        return "".join(self.parts)


def uuid():
    h = r(HEX, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


def png_data_uri():
    raw = b"\x89PNG\r\n\x1a\n" + bytes(rng.randrange(256) for _ in range(rng.randrange(120, 600)))
    return "data:image/png;base64," + base64.b64encode(raw).decode()


NEGATIVES = {
    "uuid": lambda: uuid(),
    "git-sha": lambda: r(HEX, 40),
    "integrity": lambda: "sha512-" + base64.b64encode(bytes(rng.randrange(256) for _ in range(64))).decode(),
    "sha256-digest": lambda: "sha256:" + r(HEX, 64),
    "md5": lambda: r(HEX, 32),
    "base64-image": png_data_uri,
}

PLACEHOLDERS = [
    ("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE"),
    ("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("OPENAI_API_KEY", "sk-..."),
    ("OPENAI_API_KEY", "your-openai-api-key"),
    ("GITHUB_TOKEN", "${{ secrets.GITHUB_TOKEN }}"),
    ("DB_PASSWORD", "${DB_PASSWORD}"),
    ("api_key", "<YOUR_API_KEY>"),
    ("STRIPE_SECRET_KEY", "sk_test_xxxxxxxxxxxxxxxxxxxxxxxx"),
    ("password", "changeme"),
    ("SLACK_WEBHOOK_URL", "https://hooks.slack.com/services/XXX/YYY/ZZZ"),
    ("token", "{{ vault_token }}"),
    ("SECRET_KEY", "your-secret-key-here"),
    ("ANTHROPIC_API_KEY", "sk-ant-..."),
    ("client_secret", "REPLACE_ME"),
]

WORDS = ("request handler user session cache config module service build deploy worker queue "
         "token password secret key auth login logout refresh retry timeout connection database "
         "index table column migration schema response payload header cookie client server "
         "upstream branch commit merge release version package dependency error warning info").split()


def sentence(k=8):
    return " ".join(rng.choice(WORDS) for _ in range(k))


# ---------------------------------------------------------------------------- contexts
def assign(doc, style, key, emit):
    """Writes `key <op> value` in the given style; emit(doc) writes the value."""
    if style == "env":
        doc.t(f"{key}="); emit(doc); doc.t("\n")
    elif style == "env-quoted":
        doc.t(f"export {key}=\""); emit(doc); doc.t("\"\n")
    elif style == "json":
        doc.t(f'  "{key}": "'); emit(doc); doc.t('",\n')
    elif style == "yaml":
        doc.t(f"  {key}: "); emit(doc); doc.t("\n")
    elif style == "py":
        doc.t(f"{key} = \""); emit(doc); doc.t("\"\n")
    elif style == "js":
        doc.t(f"const {key} = '"); emit(doc); doc.t("';\n")
    elif style == "go":
        doc.t(f"\t{key} := \""); emit(doc); doc.t("\"\n")
    elif style == "log":
        doc.t(f"2026-11-{rng.randrange(10,28)}T{rng.randrange(10,23)}:{rng.randrange(10,59)}:{rng.randrange(10,59)}Z INFO loaded config {key}="); emit(doc); doc.t(f" pid={rng.randrange(100,99999)}\n")
    elif style == "escaped-json":
        doc.t(f'{{"tool_result": "{{\\"{key}\\": \\"'); emit(doc); doc.t('\\"}"}\n')


STYLES = ["env", "env-quoted", "json", "yaml", "py", "js", "go", "log", "escaped-json"]


def plant_secret(doc, rule, style):
    if rule == "twilio-api-key":
        if rng.random() < 0.5:
            assign(doc, style, "TWILIO_API_KEY", lambda d: d.secret("SK" + r(HEX, 32), rule))
        else:
            assign(doc, style, "TWILIO_AUTH_TOKEN", lambda d: d.secret(r(HEX, 32), rule))
        return
    if rule in FAMILIES:
        kind = rule
        rule, names, gen = FAMILIES[kind]
    else:
        kind = rule
        names, gen = KEYED[rule]
    key = rng.choice(names)
    value = gen()
    assign(doc, style, key, lambda d: d.secret(value, rule, kind))


def plant_structural(doc, kind):
    """Secrets that live inside a structure rather than after a key."""
    if kind == "database-url-password":
        scheme = rng.choice(["postgres", "postgresql", "mysql", "mongodb+srv", "redis", "amqp"])
        doc.t(f"DATABASE_URL={scheme}://{rng.choice(['app', 'admin', 'svc_user'])}:")
        doc.secret(password(), kind)
        doc.t(f"@{rng.choice(['db', 'db.internal', 'cluster0.ab12c.mongodb.net'])}:{rng.randrange(1000, 9999)}/{rng.choice(['app', 'prod'])}\n")
    elif kind == "url-basic-auth":
        doc.t(f"$ git clone https://{rng.choice(['deploy', 'ci', 'bot'])}:")
        doc.secret(r(ALNUM, 20) + str(rng.randrange(10)), kind)
        doc.t(f"@git.{rng.choice(['corp', 'acme', 'internal'])}.io/team/repo.git\n")
    elif kind == "private-key":
        typ = rng.choice(["RSA ", "EC ", "OPENSSH ", ""])
        body = "\n".join(r(B64, 64) for _ in range(rng.randrange(4, 25))) + "\n"
        doc.t(f"-----BEGIN {typ}PRIVATE KEY-----\n")
        doc.secret(body, kind)
        doc.t(f"-----END {typ}PRIVATE KEY-----\n")
    elif kind == "private-key-json":
        body = "\\n".join(r(B64, 64) for _ in range(rng.randrange(4, 20))) + "\\n"
        doc.t('{"type": "service_account", "project_id": "prod-123", "private_key": "-----BEGIN PRIVATE KEY-----\\n')
        doc.secret(body, "private-key")
        doc.t('-----END PRIVATE KEY-----\\n", "client_email": "svc@prod-123.iam.gserviceaccount.com"}\n')
    elif kind == "slack-webhook-url":
        doc.t("SLACK_WEBHOOK=https://hooks.slack.com/services/")
        doc.secret("T" + r(ALNUM, 8) + "/B" + r(ALNUM, 10) + "/" + r(ALNUM, 24), kind)
        doc.t("\n")
    elif kind == "discord-webhook-url":
        doc.t(f"  webhook_url: https://discord.com/api/webhooks/{r(DIGITS, 18)}/")
        doc.secret(r(URLSAFE, 68), kind)
        doc.t("\n")
    elif kind == "azure-storage-account-key":
        doc.t("AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=prodstore;AccountKey=")
        doc.secret(r(B64, 86) + "==", kind)
        doc.t(";EndpointSuffix=core.windows.net\n")
    elif kind == "azure-sas-token":
        doc.t("curl 'https://prodstore.blob.core.windows.net/backups/db.tar?sv=2022-11-02&ss=b&srt=o&sp=r&se=2027-01-01&sig=")
        doc.secret(r(ALNUM, 43) + "%3D", kind)
        doc.t("' -o db.tar\n")
    elif kind == "npmrc-auth":
        doc.t(f"//npm.{rng.choice(['corp', 'acme'])}.io/:_auth=")
        doc.secret(base64.b64encode((r(LETTERS, 8) + ":" + password()).encode()).decode(), kind)
        doc.t("\n")
    elif kind == "authorization-header":
        doc.t(f"$ curl -s -H 'Authorization: Bearer ")
        doc.secret(r(ALNUM, rng.randrange(32, 64)), kind)
        doc.t(f"' https://api.{rng.choice(['acme', 'corp'])}.io/v2/{rng.choice(WORDS)}\n")
    elif kind == "stack-trace-db":
        doc.t("Traceback (most recent call last):\n  File \"/srv/app/db.py\", line 42, in connect\n"
              "    engine = create_engine(url)\nsqlalchemy.exc.OperationalError: (psycopg2.OperationalError) "
              "could not connect to server: postgresql://app:")
        doc.secret(password(), "database-url-password")
        doc.t("@10.0.3.7:5432/app\n")


STRUCTURAL = ["database-url-password", "url-basic-auth", "private-key", "private-key-json",
              "slack-webhook-url", "discord-webhook-url", "azure-storage-account-key",
              "azure-sas-token", "npmrc-auth", "authorization-header", "stack-trace-db"]


def plant_negative(doc, style):
    kind = rng.choice(list(NEGATIVES) + ["placeholder", "placeholder"])
    if kind == "placeholder":
        key, value = rng.choice(PLACEHOLDERS)
        assign(doc, style, key, lambda d: d.neg(value, "placeholder"))
        return
    value = NEGATIVES[kind]()
    keys = {"uuid": ["request_id", "trace_id", "user_id", "id"], "git-sha": ["commit", "sha", "revision"],
            "integrity": ["integrity"], "sha256-digest": ["digest", "image_digest"], "md5": ["checksum", "etag"],
            "base64-image": ["avatar", "icon", "logo"]}[kind]
    assign(doc, style, rng.choice(keys), lambda d: d.neg(value, kind))


def filler(doc, style, lines):
    for _ in range(lines):
        c = rng.randrange(10)
        if style in ("py", "js", "go"):
            fn = rng.choice(WORDS) + "_" + rng.choice(WORDS)
            choices = [
                f"def {fn}(self, {rng.choice(WORDS)}):\n" if style == "py" else f"function {fn}({rng.choice(WORDS)}) {{\n",
                f"    # {sentence()}\n",
                f"    {rng.choice(WORDS)} = self.{rng.choice(WORDS)}.get('{rng.choice(WORDS)}')\n",
                "    password = os.environ.get('DB_PASSWORD')\n" if style == "py" else "  const token = process.env.API_TOKEN;\n",
                f"    if not token:\n        raise ValueError('missing token for {rng.choice(WORDS)}')\n",
                f"    return {rng.choice(WORDS)}({rng.choice(WORDS)}, timeout={rng.randrange(1, 60)})\n",
                f"    headers = {{'Authorization': f'Bearer {{token}}'}}\n",
                f"    logger.info('refreshing token for user %s', user_id)\n",
                "}\n" if style != "py" else "\n",
                f"    secret_name = config['{rng.choice(WORDS)}_secret_name']\n",
            ]
            doc.t(choices[c])
        elif style in ("json", "escaped-json"):
            doc.t(f'  "{rng.choice(WORDS)}_{rng.choice(WORDS)}": {rng.choice([str(rng.randrange(1000)), "true", json.dumps(sentence(3))])},\n')
        elif style == "yaml":
            doc.t(rng.choice([f"  {rng.choice(WORDS)}: {rng.choice(WORDS)}\n", f"- name: {sentence(3)}\n",
                              f"  image: ghcr.io/acme/{rng.choice(WORDS)}:{rng.randrange(1, 9)}.{rng.randrange(20)}.{rng.randrange(9)}\n",
                              "  env:\n    - name: DB_PASSWORD\n      valueFrom:\n        secretKeyRef:\n          name: db\n          key: password\n",
                              f"  replicas: {rng.randrange(1, 9)}\n"]))
        elif style == "log":
            doc.t(f"2026-11-{rng.randrange(10, 28)}T{rng.randrange(10, 23)}:{rng.randrange(10, 59)}:{rng.randrange(10, 59)}.{rng.randrange(100, 999)}Z "
                  f"{rng.choice(['INFO', 'WARN', 'DEBUG', 'ERROR'])} [{rng.choice(WORDS)}] {sentence(rng.randrange(4, 12))} "
                  f"status={rng.choice([200, 201, 401, 403, 500])} dur={rng.randrange(1, 900)}ms\n")
        else:
            doc.t(rng.choice([f"# {sentence()}\n", f"{rng.choice(WORDS).upper()}_{rng.choice(WORDS).upper()}={rng.randrange(1, 65535)}\n",
                              f"$ {rng.choice(['ls -la', 'git status', 'make -j8', 'docker ps', 'kubectl get pods -n prod'])}\n",
                              f"{rng.choice(WORDS).upper()}_URL=https://{rng.choice(WORDS)}.acme.io/{rng.choice(WORDS)}\n",
                              f"LOG_LEVEL={rng.choice(['info', 'debug'])}\n"]))


EXT = {"env": "env", "env-quoted": "sh", "json": "json", "yaml": "yaml", "py": "py", "js": "js",
       "go": "go", "log": "log", "escaped-json": "jsonl"}


def make_file(secret_rate, negatives=True, target=None):
    style = rng.choice(STYLES)
    doc = Doc()
    if style == "json":
        doc.t("{\n")
    size = target or rng.randrange(800, 6000)
    while doc.n < size:
        x = rng.random()
        if x < secret_rate:
            y = rng.random()
            if y < 0.2:
                plant_structural(doc, rng.choice(STRUCTURAL))
            elif y < 0.3:
                plant_contextual(doc, rng.choice(CONTEXTUAL))
            else:
                plant_secret(doc, rng.choice(list(KEYED) + list(FAMILIES)), style)
        elif negatives and x < secret_rate + 0.12:
            if rng.random() < 0.1:
                plant_code_negative(doc)
            else:
                plant_negative(doc, style)
        else:
            filler(doc, style, 1)
    if style == "json":
        doc.t('  "end": true\n}\n')
    return style, doc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--files", type=int, default=600)
    ap.add_argument("--clean-mb", type=float, default=16)
    ap.add_argument("--dense-mb", type=float, default=8)
    ap.add_argument("--very-dense-mb", type=float, default=2)
    ap.add_argument("--seed", type=int, default=20261122)
    a = ap.parse_args()
    rng.seed(a.seed)
    for sub in ("labelled", "clean", "dense", "very-dense"):
        os.makedirs(os.path.join(a.out, sub), exist_ok=True)
    labels = []
    # Guarantee every rule (and every structural kind) appears at least 8 times, every family and
    # contextual kind 24 times, and every code negative 6 times.
    plan = ([("keyed", k) for k in KEYED for _ in range(8)] +
            [("structural", k) for k in STRUCTURAL for _ in range(8)] +
            [("keyed", k) for k in FAMILIES for _ in range(24)] +
            [("contextual", k) for k in CONTEXTUAL for _ in range(24)] +
            [("code-negative", None) for _ in range(6 * len(CODE_NEGATIVES))])
    rng.shuffle(plan)
    for i in range(a.files):
        style, doc = make_file(0.10)
        while plan and rng.random() < 0.7:
            what, k = plan.pop()
            if what == "keyed":
                plant_secret(doc, k, style)
            elif what == "contextual":
                plant_contextual(doc, k)
            elif what == "code-negative":
                plant_code_negative(doc)
            else:
                plant_structural(doc, k)
            filler(doc, style, 2)
        name = f"{i:04d}-{style}.{EXT[style]}"
        with open(os.path.join(a.out, "labelled", name), "w", newline="") as f:
            f.write(doc.text())
        labels.append({"path": "labelled/" + name, "secrets": doc.secrets, "negatives": doc.negatives})
    with open(os.path.join(a.out, "labels.json"), "w") as f:
        json.dump({"files": labels}, f, indent=1)
    stats = {}
    for sub, rate, mb, size in (("clean", 0.0, a.clean_mb, 65536), ("dense", 0.07, a.dense_mb, 65536),
                                ("very-dense", 0.6, a.very_dense_mb, 65536)):
        total, i, secrets = 0, 0, 0
        while total < mb * 1e6:
            _, doc = make_file(rate, negatives=(sub == "clean"), target=size)
            text = doc.text()
            with open(os.path.join(a.out, sub, f"{i:04d}.txt"), "w", newline="") as f:
                f.write(text)
            total += len(text)
            secrets += len(doc.secrets)
            i += 1
        stats[sub] = {"bytes": total, "secrets": secrets, "secrets_per_mb": secrets / (total / 1e6)}
    with open(os.path.join(a.out, "stats.json"), "w") as f:
        json.dump(stats, f, indent=1)
    n_s = sum(len(x["secrets"]) for x in labels)
    n_n = sum(len(x["negatives"]) for x in labels)
    print(f"corpus: {len(labels)} labelled files, {n_s} secrets, {n_n} hard negatives -> {a.out}")


if __name__ == "__main__":
    main()
