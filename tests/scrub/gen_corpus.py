#!/usr/bin/env python3
"""Deterministic generator of the labelled secret-scrubbing corpus (bench/scrub/run.sh).

Writes into OUT_DIR:
  labelled/NNNN-<kind>.<ext>  realistic files (.env, JSON, YAML, source code, shell history, logs,
                              stack traces) with planted secrets and hard negatives
  labels.json                 per file: secrets [{start,end,rule}] and negatives [{start,end,kind}]
                              (byte offsets; the corpus is ASCII so they equal JS string offsets)
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


class Doc:
    """Text under construction, with labelled spans."""

    def __init__(self):
        self.parts, self.n, self.secrets, self.negatives = [], 0, [], []

    def t(self, s):
        self.parts.append(s)
        self.n += len(s)

    def secret(self, s, rule):
        self.secrets.append({"start": self.n, "end": self.n + len(s), "rule": rule})
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
    names, gen = KEYED[rule]
    key = rng.choice(names)
    value = gen()
    assign(doc, style, key, lambda d: d.secret(value, rule))


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
            if rng.random() < 0.25:
                plant_structural(doc, rng.choice(STRUCTURAL))
            else:
                plant_secret(doc, rng.choice(list(KEYED)), style)
        elif negatives and x < secret_rate + 0.12:
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
    # Guarantee every rule (and every structural kind) appears at least 8 times.
    plan = [("keyed", k) for k in KEYED for _ in range(8)] + [("structural", k) for k in STRUCTURAL for _ in range(8)]
    rng.shuffle(plan)
    for i in range(a.files):
        style, doc = make_file(0.10)
        while plan and rng.random() < 0.6:
            what, k = plan.pop()
            if what == "keyed":
                plant_secret(doc, k, style)
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
