// True-positive and false-positive examples for every default rule, plus secrets in awkward
// places (split across lines, JSON strings with escapes, URLs, next to base64 blocks).
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "scrub/rule_scrubber.h"

namespace contextd::scrub {
namespace {

constexpr std::string_view kAlnum =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
constexpr std::string_view kHex = "0123456789abcdef";
constexpr std::string_view kB64 =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::string_view kUrlSafe =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
constexpr std::string_view kAwsChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
constexpr std::string_view kLetters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
constexpr std::string_view kDigits = "0123456789";

// Deterministic random string; every call advances one shared seeded generator.
std::string R(std::string_view alphabet, size_t n) {
  static std::mt19937 rng(20261122);
  std::string s;
  for (size_t i = 0; i < n; ++i) s.push_back(alphabet[rng() % alphabet.size()]);
  return s;
}

struct Case {
  std::string rule;
  std::string text;
  std::string secret;  // TP: must be gone from the output. FP: unused.
};

const RuleScrubber& Defaults() {
  static const std::shared_ptr<const RuleScrubber> s = [] {
    auto b = BuildScrubber(ScrubConfig{});
    EXPECT_TRUE(b.ok()) << b.status();
    return *b;
  }();
  return *s;
}

std::vector<Case> TruePositives() {
  std::vector<Case> c;
  auto add = [&](std::string rule, std::string before, std::string secret, std::string after) {
    c.push_back({rule, before + secret + after, secret});
  };
  add("aws-access-key-id", "AWS_ACCESS_KEY_ID=", "AKIA" + R(kAwsChars, 16), "\n");
  add("aws-access-key-id", "{\"AccessKeyId\": \"", "ASIA" + R(kAwsChars, 16), "\"}");
  add("aws-secret-access-key", "aws_secret_access_key = ", R(kB64, 40), "\n");
  add("aws-secret-access-key", "AWS_SECRET_ACCESS_KEY: \"", R(kB64, 40), "\"");
  add("gcp-api-key", "const key = 'AIza", R(kUrlSafe, 35), "';");
  add("gcp-oauth-client-secret", "client_secret: GOCSPX-", R(kUrlSafe, 28), "\n");
  add("gcp-oauth-access-token", "Authorization: Bearer ", "ya29." + R(kUrlSafe, 120), "\n");
  add("azure-ad-client-secret", "AZURE_CLIENT_SECRET=", R(kAlnum, 3) + "8Q~" + R(kAlnum, 34), "\n");
  // azure-storage-account-key: in a connection string and as the value of a key name.
  add("azure-storage-account-key", "DefaultEndpointsProtocol=https;AccountName=prod;AccountKey=",
      R(kB64, 86) + "==", ";EndpointSuffix=core.windows.net");
  add("azure-storage-account-key", "AZURE_STORAGE_KEY=", R(kB64, 86) + "==", "\n");
  add("azure-storage-account-key", "export STORAGE_ACCOUNT_KEY=\"", R(kB64, 86) + "==", "\"\n");
  add("azure-storage-account-key", "  storageAccountKey: ", R(kB64, 86) + "==", "\n");
  add("azure-storage-account-key", "{\"accountKey\": \"", R(kB64, 86) + "==", "\"}");
  add("azure-storage-account-key", "account_key = '", R(kB64, 86) + "==", "'\n");
  add("azure-storage-account-key", "az storage blob list --account-name prod --account-key ",
      R(kB64, 86) + "==", " -c backups");
  add("azure-sas-token",
      "https://prod.blob.core.windows.net/c?sv=2022-11-02&sr=c&sig=", R(kAlnum, 43) + "%3D",
      "&se=2027-01-01");
  add("digitalocean-token", "DO_TOKEN=", "dop_v1_" + R(kHex, 64), "\n");
  add("hashicorp-vault-token", "VAULT_TOKEN=", "hvs." + R(kUrlSafe, 95), "\n");
  add("github-pat", "git clone https://x:", "ghp_" + R(kAlnum, 36), "@github.com/o/r.git");
  add("github-pat", "token ", "ghp_" + R(kAlnum, 36), "");
  add("github-fine-grained-pat", "GH_TOKEN=", "github_pat_" + R(kAlnum, 22) + "_" + R(kAlnum, 59),
      "\n");
  add("github-oauth-token", "oauth: ", "gho_" + R(kAlnum, 36), "\n");
  add("github-app-token", "installation token ", "ghs_" + R(kAlnum, 36), " expires soon");
  add("github-refresh-token", "refresh=", "ghr_" + R(kAlnum, 76), "\n");
  add("gitlab-pat", "PRIVATE-TOKEN: ", "glpat-" + R(kUrlSafe, 20), "\n");
  add("gitlab-pipeline-trigger-token", "curl -F token=", "glptt-" + R(kHex, 40), " -F ref=main");
  add("gitlab-runner-token", "token = \"", "glrt-" + R(kUrlSafe, 20), "\"");
  add("gitlab-deploy-token", "password: ", "gldt-" + R(kUrlSafe, 20), "\n");
  add("slack-token",
      "SLACK_BOT_TOKEN=", "xoxb-" + R(kDigits, 12) + "-" + R(kDigits, 13) + "-" + R(kAlnum, 24),
      "\n");
  add("slack-token", "app token: ",
      "xapp-1-A" + R("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 10) + "-" + R(kDigits, 13) + "-" +
          R("abcdef0123456789", 64),
      "\n");
  add("slack-webhook-url", "webhook: https://hooks.slack.com/services/",
      "T" + R(kAlnum, 8) + "/B" + R(kAlnum, 10) + "/" + R(kAlnum, 24), "\n");
  add("discord-webhook-url", "url = \"https://discord.com/api/webhooks/123456789012345678/",
      R(kUrlSafe, 68), "\"");
  add("discord-bot-token",
      "DISCORD_BOT=", "M" + R(kUrlSafe, 23) + "." + R(kUrlSafe, 6) + "." + R(kUrlSafe, 27), "\n");
  add("telegram-bot-token", "bot = Bot(\"", "123456789:AA" + R(kUrlSafe, 33), "\")");
  add("stripe-api-key", "Stripe.api_key = '", "sk_live_" + R(kAlnum, 24), "'");
  add("stripe-api-key", "STRIPE_KEY=", "rk_test_" + R(kAlnum, 99), "\n");
  add("stripe-webhook-secret", "endpoint_secret = \"", "whsec_" + R(kAlnum, 32), "\"");
  add("square-access-token", "SQUARE_TOKEN=", "EAAA" + R(kUrlSafe, 60), "\n");
  add("square-access-token", "secret: ", "sq0csp-" + R(kUrlSafe, 43), "\n");
  add("paypal-braintree-access-token", "BT=",
      "access_token$production$" + R("abcdefghijklmnopqrstuvwxyz0123456789", 16) + "$" +
          R(kHex, 32),
      "\n");
  add("paypal-client-secret", "PAYPAL_CLIENT_SECRET=", R(kUrlSafe, 80), "\n");
  add("openai-api-key",
      "OPENAI_API_KEY=", "sk-proj-" + R(kUrlSafe, 74) + "T3BlbkFJ" + R(kUrlSafe, 74), "\n");
  add("openai-api-key", "openai.api_key = \"", "sk-" + R(kAlnum, 20) + "T3BlbkFJ" + R(kAlnum, 20),
      "\"");
  add("anthropic-api-key", "ANTHROPIC_API_KEY=", "sk-ant-api03-" + R(kUrlSafe, 93) + "AA", "\n");
  add("huggingface-token", "HF_TOKEN=", "hf_" + R(kLetters, 34), "\n");
  add("cohere-api-key", "COHERE_API_KEY=", R(kAlnum, 40), "\n");
  add("groq-api-key", "client = Groq(api_key=\"", "gsk_" + R(kAlnum, 52), "\")");
  add("replicate-api-token", "REPLICATE_API_TOKEN=", "r8_" + R(kAlnum, 37), "\n");
  add("perplexity-api-key", "key: ", "pplx-" + R(kAlnum, 48), "\n");
  add("xai-api-key", "XAI=", "xai-" + R(kAlnum, 80), "\n");
  add("mistral-api-key", "MISTRAL_API_KEY=", R(kAlnum, 32), "\n");
  add("sendgrid-api-key", "sg.api_key = '", "SG." + R(kUrlSafe, 22) + "." + R(kUrlSafe, 43), "'");
  add("mailgun-api-key", "auth=(\"api\", \"", "key-" + R(kHex, 32), "\")");
  add("twilio-api-key", "TWILIO_API_KEY=", "SK" + R(kHex, 32), "\n");
  add("twilio-api-key", "twilio_auth_token = \"", R(kHex, 32), "\"");
  add("npm-access-token", "//registry.npmjs.org/:_authToken=", "npm_" + R(kAlnum, 36), "\n");
  add("npmrc-auth", "//npm.corp.internal/:_auth=", R(kB64, 40), "\n");
  add("pypi-upload-token", "password = ", "pypi-AgEIcHlwaS5vcmc" + R(kUrlSafe, 70), "\n");
  add("shopify-token", "X-Shopify-Access-Token: ", "shpat_" + R(kHex, 32), "\n");
  add("linear-api-key", "LINEAR_API_KEY=", "lin_api_" + R(kAlnum, 40), "\n");
  add("age-secret-key", "# created\n",
      "AGE-SECRET-KEY-1" + R("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58), "\n");
  add("database-url-password", "DATABASE_URL=postgres://app:", "s3cr3t-P4ss",
      "@db.internal:5432/app");
  add("database-url-password", "postgres://admin:", "Xk9#mP2vL8qR", "@db.prod.internal:5432/app");
  add("database-url-password", "mongodb+srv://admin:", "hunter22", "@cluster0.mongodb.net/test");
  add("database-url-password", "REDIS_URL=redis://default:", R(kAlnum, 24), "@cache:6379/0");
  add("url-basic-auth", "pip install -i https://deploy:", "Zx81_pQ2-kk9",
      "@pypi.corp.io/simple pkg");
  add("jwt", "Authorization: Bearer ",
      "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ." +
          R(kUrlSafe, 43),
      "\n");
  {
    std::string body;
    for (int i = 0; i < 10; ++i) body += R(kB64, 64) + "\n";
    add("private-key", "-----BEGIN RSA PRIVATE KEY-----\n", body,
        "-----END RSA PRIVATE KEY-----\n");
    add("private-key", "{\"private_key\": \"-----BEGIN PRIVATE KEY-----\\n",
        R(kB64, 64) + "\\n" + R(kB64, 64) + "\\n", "-----END PRIVATE KEY-----\\n\"}");
  }
  // cli-password: passwords that a command line passes by a short flag.
  add("cli-password", "$ mysql -h db -u root -p", "S3cr3tPw9", " app < dump.sql");
  add("cli-password", "mysqldump -u backup -p'", "Zq8-rT4!mv2W", "' --all-databases > all.sql");
  add("cli-password", "sshpass -p '", "Gh7!kLm2pqX", "' ssh deploy@10.0.0.4");
  add("cli-password", "sshpass -p ", "Gh7kLm2pqXz", " scp a.tar host:/tmp");
  add("cli-password", "curl -s -u admin:", "Xk9mP2vL8qR", " https://ci.corp.io/api/json");
  add("cli-password", "curl --user \"deploy:", "p4ss-W0rd-99", "\" -X POST https://x.io");
  add("cli-password", "redis-cli -h cache -a ", "Xk9mP2vL8qRw", " ping");
  // generic-password: the password family of key names, in every syntax that assigns a value.
  add("generic-password", "DB_PASSWORD=", "Tr0ub4dor&3x", "\n");
  add("generic-password", "  password: \"", "c0rrect-h0rse", "\"\n");
  add("generic-password", "mysql -u root --password=", "r00tPa55word", " db");
  add("generic-password", "{\"password\":\"", "p4ssW0rd!9", "\"}");
  add("generic-password", "DB_PASS=", "Xk9mP2vL8qR", "\n");
  add("generic-password", "  admin_pass: \"", "Tr0ub4dor&3x", "\"\n");
  add("generic-password", "$ PGPASSWORD=", "hunter22x", " psql -h db -U app\n");
  add("generic-password", "export MYSQL_PWD='", "r00tPa55word", "'\n");
  add("generic-password", "  \"passwd\": \"", "p4ssW0rd!9", "\",\n");
  add("generic-password", "auth: { user: 'mailer', pass: '", "Zq8-rT4!mv2W", "' },");
  add("generic-password", "const dbPass = \"", "Gh7!kLm2pq", "\";");
  add("generic-password", "db_pass := \"", "Gh7!kLm2pq", "\"\n");
  add("generic-password", "$admin_password = '", "Qw3rty!x9Zz", "';");
  add("generic-password", "Server=db;Database=app;User Id=sa;Password=", "Xk9#mP2vL8qR", ";");
  add("generic-password", "Driver={ODBC Driver 18};Server=x;Uid=app;Pwd=", "Qw3rty!x9Z", ";");
  add("generic-password", "passphrase = ", "correct-h0rse-battery", "\n");
  add("generic-password", "openssl pkcs12 -export -in c.pem -passout pass:", "Xk9mP2vL8qR",
      " -out c.p12");
  add("generic-password", "INFO connecting with password=", "Wq7#pL2mZx", " user=app\n");
  add("generic-password", "<password>", "Wq7pL2mZx9", "</password>");
  add("generic-password", "the new password is ", "Wq7pL2mZx9", "\n");
  add("generic-password", "{\"tool_result\": \"{\\\"db_password\\\": \\\"", "Wq7pL2mZx9",
      "\\\"}\"}");
  add("generic-password", "login('admin', password=\"", "Xk9mP2vL8qR", "\")");
  add("generic-password", "config.set('db', 'password', '", "Xk9mP2vL8qR", "')");
  add("generic-password", "os.environ[\"DB_PASSWORD\"] = \"", "Xk9mP2vL8qRw", "\"");
  add("generic-password", "$db['default']['password'] = '", "Xk9mP2vL8qRw", "';");
  add("generic-password", "<add key=\"DbPassword\" value=\"", "Xk9mP2vL8qRw", "\" />");
  add("generic-password", "machine api.heroku.com login me@x.io password ", "Xk9mP2vL8qRw", "\n");
  add("generic-password", "docker run -e POSTGRES_PASSWORD=", "Xk9mP2vL8qRw", " postgres:16");
  add("generic-password", "spring.datasource.password=", "Xk9mP2vL8qRw", "\n");
  // generic-secret: the API key / token family of key names.
  add("generic-secret", "API_KEY=", R(kAlnum, 31) + "7", "\n");
  add("generic-secret", "client_secret: '", R(kUrlSafe, 39) + "7", "'");
  add("generic-secret", "\"access_token\": \"", R(kAlnum, 47) + "7", "\",");
  add("generic-secret", "export SECRET_KEY=", R(kAlnum, 49) + "7", "\n");
  add("generic-secret", "apikey = \"", R(kAlnum, 31) + "7", "\"\n");
  add("generic-secret", "curl -H 'x-api-key: ", R(kAlnum, 31) + "7", "' https://api.x.io");
  add("generic-secret", "  app_secret: ", R(kAlnum, 31) + "7", "\n");
  add("generic-secret", "AUTH_TOKEN=", R(kHex, 39) + "7", "\n");
  add("generic-secret", "access_key = '", R(kAlnum, 31) + "7", "'\n");
  add("generic-secret", "{\"auth_key\": \"", R(kAlnum, 31) + "7", "\"}");
  add("generic-secret", "private_token: ", R(kAlnum, 19) + "7", "\n");
  add("generic-secret", "client = Client(api_key=\"", R(kAlnum, 31) + "7", "\")");
  add("generic-secret", "GET /v1/items?access_token=", R(kAlnum, 31) + "7", "&page=2 HTTP/1.1");
  // generic-flag: a flag and its value as separate words.
  add("generic-flag", "./manage.py createsuperuser --password ", "Xk9mP2vL8qR", " --noinput");
  add("generic-flag", "$ deploy --db-password '", "Xk9#mP2vL8qR", "' --yes");
  add("generic-flag", "keytool -list -keystore k.jks -storepass ", "Xk9mP2vL8qR", "\n");
  add("generic-flag", "$ tool deploy --api-key ", R(kAlnum, 31) + "7", " --region eu");
  add("generic-flag", "gh-runner register --auth-token ", R(kAlnum, 31) + "7", "\n");
  add("generic-flag", "python upload.py --api_key \"", R(kAlnum, 31) + "7", "\"");
  // authorization-header: Bearer / Basic / Token credentials wherever a header is written down.
  add("authorization-header", "curl -H 'Authorization: Bearer ", R(kAlnum, 40), "' https://api");
  add("authorization-header", "DEBUG send: Authorization: Bearer ", R(kB64, 40),
      "\r\n");  // an AWS secret access key used as a bearer token
  add("authorization-header", "> Authorization: Bearer ", R(kAlnum, 32), "\n");
  add("authorization-header", "{\"headers\": {\"Authorization\": \"Bearer ", R(kUrlSafe, 40),
      "\"}}");
  add("authorization-header", "headers = {'Authorization': 'Basic ",
      "YWRtaW46WGs5bVAydkw4cVI=", "'}");
  add("authorization-header", "curl --header \"Authorization: Basic ",
      "ZGVwbG95OlpxOC1yVDQhbXYyVw==", "\" https://x");
  add("authorization-header", "{\\\"Authorization\\\": \\\"Bearer ", R(kAlnum, 36), "\\\"}");
  add("authorization-header", "req.Header.Set(\"Authorization\", \"token ", R(kHex, 40), "\")");
  add("authorization-header", "Proxy-Authorization: Basic ", "cHJveHk6WGs5bVAydkw4cVI=", "\n");
  return c;
}

std::vector<Case> FalsePositives() {
  return {
      {"aws-access-key-id", "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", ""},
      {"aws-access-key-id", "AKIAAAAAAAAAAAAAAAAA is not random", ""},
      {"aws-secret-access-key", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
       ""},
      {"gcp-api-key", "AIzaSyXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX", ""},
      {"gcp-oauth-client-secret", "GOCSPX-<your-client-secret>", ""},
      {"gcp-oauth-access-token", "ya29.placeholder", ""},
      {"azure-ad-client-secret", "the Q~ operator", ""},
      {"azure-storage-account-key", "AccountKey=<account-key>;", ""},
      {"azure-storage-account-key", "AZURE_STORAGE_KEY=${AZURE_STORAGE_KEY}", ""},
      // An sha512 integrity hash is 88 base64 characters ending in '==' too.
      {"azure-storage-account-key",
       "storage = get_storage()\n\"integrity\": \"sha512-" + std::string(86, 'A') + "==\"", ""},
      {"azure-storage-account-key",
       "storage_key: "
       "\"sha512-9u/aB1F1Cy/1yH5e/f+hfNMeQPvEkWTF9k0Lwr5eEW1T6HQ9c0sSp6Gy1zbmXo4E/2uMA==\"",
       ""},
      {"azure-sas-token", "?sig=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", ""},
      {"digitalocean-token", "dop_v1_ is the prefix", ""},
      {"hashicorp-vault-token", "hvs.example", ""},
      {"github-pat", "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", ""},
      {"github-pat", "use the ghp_ prefix", ""},
      {"github-fine-grained-pat", "github_pat_<token>", ""},
      {"github-oauth-token", "gho_1234", ""},
      {"github-app-token", "ghs_ tokens expire after an hour", ""},
      {"github-refresh-token", "ghr_short", ""},
      {"gitlab-pat", "glpat-xxxxxxxxxxxxxxxxxxxx", ""},
      {"gitlab-pipeline-trigger-token", "glptt-0000", ""},
      {"gitlab-runner-token", "glrt-${RUNNER_TOKEN}", ""},
      {"gitlab-deploy-token", "gldt-", ""},
      {"slack-token", "xoxb-your-token-here", ""},
      {"slack-webhook-url",
       "https://hooks.slack.com/services/XXXXXXXXX/XXXXXXXXXXX/XXXXXXXXXXXXXXXXXXXXXXXX", ""},
      {"discord-webhook-url", "https://discord.com/api/webhooks/{id}/{token}", ""},
      {"discord-bot-token", "bot: see README.md.section.about-tokens-and-configuration", ""},
      {"telegram-bot-token", "time 12:AA is not a token", ""},
      {"stripe-api-key", "sk_test_xxxxxxxxxxxxxxxxxxxxxxxx", ""},
      {"stripe-api-key", "sk_live_ keys start with", ""},
      {"stripe-webhook-secret", "whsec_...", ""},
      {"square-access-token", "EAAA is the prefix", ""},
      {"paypal-braintree-access-token", "access_token$production$<merchant>$<token>", ""},
      {"paypal-client-secret", "PAYPAL_CLIENT_SECRET=${PAYPAL_CLIENT_SECRET}", ""},
      {"openai-api-key", "OPENAI_API_KEY=sk-...", ""},
      {"openai-api-key", "sk-proj-your-key", ""},
      {"anthropic-api-key", "ANTHROPIC_API_KEY=sk-ant-api03-...", ""},
      {"huggingface-token", "hf_hub_download(repo_id=\"gpt2\", filename=\"config.json\")", ""},
      {"cohere-api-key", "cohere_client = cohere.Client(os.environ[\"CO_API_KEY\"])", ""},
      {"groq-api-key", "gsk_your_key", ""},
      {"replicate-api-token", "r8_...", ""},
      {"perplexity-api-key", "pplx-7b-online model", ""},
      {"xai-api-key", "xai-org/grok-1", ""},
      {"mistral-api-key", "mistral_api_key = os.environ.get(\"MISTRAL_API_KEY\")", ""},
      {"sendgrid-api-key", "msg.send(SG.helpers.mail)", ""},
      {"mailgun-api-key", "key-value store key-0000000000000000000000000000000", ""},
      {"twilio-api-key", "ask questions; SKU 12", ""},
      {"npm-access-token", "npm_config_cache=/tmp/npm_cache_dir_for_ci_jobs_number_1", ""},
      {"npmrc-auth", "//registry.npmjs.org/:_authToken=${NPM_TOKEN}", ""},
      {"pypi-upload-token", "tokens start with pypi-AgEIcHlwaS5vcmc", ""},
      {"shopify-token", "shpat_<token>", ""},
      {"linear-api-key", "lin_api_key_name", ""},
      {"age-secret-key", "AGE-SECRET-KEY-1 followed by bech32", ""},
      {"database-url-password", "postgres://app:${DB_PASSWORD}@db:5432/app", ""},
      {"database-url-password", "mysql://root:password@localhost/test", ""},
      {"database-url-password", "postgresql://localhost:5432/app", ""},
      {"database-url-password", "postgres://user:secret@localhost/db", ""},
      {"database-url-password", "DATABASE_URL = 'postgres://postgres:postgres@localhost:5432/test'",
       ""},
      {"database-url-password", "amqp://guest:guest@localhost:5672//", ""},
      {"database-url-password", "mysql://app:app_password@db/app", ""},
      {"database-url-password", "redis://:s3cr3t-P4ss@cache.example.com:6379/0", ""},
      {"url-basic-auth", "https://user:<password>@host.example.org/path", ""},
      {"url-basic-auth", "https://github.com/org/repo/blob/main/a.py#L10", ""},
      // URL-parsing test output: placeholder credentials, reserved hosts.
      {"url-basic-auth", ">>> urlparse('http://user:pass@example.com')", ""},
      {"url-basic-auth", "assert u.netloc == 'user:password@host'  # http://user:password@host",
       ""},
      {"url-basic-auth", "http://user:password@host:8080/path?q=1", ""},
      {"url-basic-auth", "http://admin:hunter22@example.com/login", ""},
      {"url-basic-auth", "proxy = 'http://user:pass123@proxy.test:3128'", ""},
      {"url-basic-auth", "https://{user}:{password}@{host}/{path}", ""},
      {"jwt", "eyJ is how base64 JSON starts", ""},
      {"private-key",
       "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
       ""},
      {"private-key", "-----BEGIN RSA PRIVATE KEY-----\n...\n-----END RSA PRIVATE KEY-----", ""},
      {"generic-password", "password = os.getenv(\"DB_PASSWORD\")", ""},
      {"generic-password", "DB_PASSWORD=changeme", ""},
      {"generic-password", "if password == confirm_password:", ""},
      {"generic-password", "<input type=\"password\" name=\"password\">", ""},
      {"generic-password", "password: ${{ secrets.DB_PASSWORD }}", ""},
      {"generic-password", "    return login(password, timeout=13)", ""},
      // Identifiers are not values (a form's field list, constants, subscripts, class names).
      {"generic-password", "field_order = ['old_password', 'new_password1', 'new_password2']", ""},
      {"generic-password", "    fields = (\"password\", \"password_confirm2\")", ""},
      {"generic-password", "password = self.cleaned_data['password2']", ""},
      {"generic-password", "NL80211_ATTR_SAE_PASSWORD,\n\tNL80211_ATTR_TWT_RESPONDER,", ""},
      {"generic-password", "password = auth[2]", ""},
      {"generic-password", "Passwd=credentials[1], service=service", ""},
      {"generic-password", "newPassword = oldPassword2", ""},
      {"generic-password", "MovedAttribute(\"HTTPPasswordMgr\", \"urllib2\", \"urllib.request\"),",
       ""},
      {"generic-password", "re.compile(r'(?<password>[-a-zA-Z0-9_]{1,256})@')", ""},
      // Placeholders and lookups.
      {"generic-password", "password = os.environ[\"DB_PASSWORD\"]", ""},
      {"generic-password", "PASSWORD=${DB_PASSWORD:-changeme}", ""},
      {"generic-password", "password: {{ vault_db_password }}", ""},
      {"generic-password", "\"password\": \"%(password)s\"", ""},
      {"generic-password", "password = None", ""},
      {"generic-password", "\"password\": null,", ""},
      {"generic-password", "DB_PASSWORD=password123", ""},
      {"generic-password", "self.client.login(username='admin', password='admin1234')", ""},
      {"generic-password", "curl -d password=$PASSWORD https://x", ""},
      {"generic-password",
       "\"password\": "
       "\"pbkdf2_sha256$260000$Zx9Qw8Er7Ty6$abcdefghijklmnopqrstuvwxyz0123456789ABCDE=\"",
       ""},
      {"generic-password", "PASSWORD_MIN_LENGTH = 12345678", ""},
      {"generic-password", "password_hash_algorithm: argon2id-v19", ""},
      // 'pass' is a word of its own only: not in passed / passport / bypass / compass, nor the
      // Python statement; PWD is the working directory.
      {"generic-password", "        pass\n    except KeyError:  # noqa: E722\n        pass", ""},
      {"generic-password", "=== 1234 passed, 5 skipped in 12.30s ===", ""},
      {"generic-password", "passport_number = 'AB1234567'", ""},
      {"generic-password", "bypass_cache = 'v12345678'", ""},
      {"generic-password", "compass = 'NW1234567'", ""},
      {"generic-password", "PWD=/home/user1/project2\nOLDPWD=/home/user1", ""},
      {"generic-password", "pwd = os.getcwd()", ""},
      {"generic-password", "echo $TOKEN | docker login -u ci --password-stdin ghcr.io/org1/repo",
       ""},
      {"generic-password", "proxy_bypass = '10.0.0.0/8,192.168.0.0/16'", ""},
      {"generic-secret", "csrf_token = \"a1b2c3d4e5f6a1b2c3d4e5f6\"", ""},
      {"generic-secret", "token_count = 4096", ""},
      {"generic-secret",
       "\"integrity\": \"sha512-" + std::string("Zm9vYmFyYmF6cXV4cXV1eHF1dXhxdXV4cXV1eA==") + "\"",
       ""},
      {"generic-secret", "api_key = settings.OPENAI_API_KEY", ""},
      {"generic-secret", "secret_name: 550e8400-e29b-41d4-a716-446655440000", ""},
      {"generic-secret", "api_key=<YOUR_API_KEY>\nuser_id=01a0dc07-4a59-47af-a736-90d6a15f2091",
       ""},
      {"generic-secret", "refresh_token=oauth2_access_token", ""},
      {"generic-secret", "url = 'https://x.io/cb?refresh_token=oauth2_access_token&state=a1'", ""},
      {"generic-secret", "SECRET_KEY = 'fake-key'", ""},
      {"generic-secret", "api_key: \"{{ api_key }}\"", ""},
      {"generic-secret", "token = None", ""},
      {"generic-secret",
       "PRIVATE_KEY_TYPES = typing.Union[\n    ed25519.Ed25519PrivateKey,\n    "
       "x448.X448PrivateKey,\n]",
       ""},
      {"generic-secret", "GNUTLS_PKCS11_OBJ_TOKEN_LABEL,\n\tGNUTLS_PKCS11_OBJ_TOKEN_SERIAL,", ""},
      {"generic-secret", "exports2.TOKEN = exports2.STRICT_TOKEN = exports2.HEX", ""},
      {"generic-secret", "\"oauth_token_secret=secret%3Dpassword&oauth_token=lock%26key\"", ""},
      // Sample values of RFC 6749 (quoted by every OAuth library).
      {"generic-secret",
       "{\"access_token\":\"2YotnFZFEjr1zCsicMWpAA\",\"refresh_token\":\"tGzv3JOkF0XG5Qx2TlKWIA\"}",
       ""},
      {"generic-secret", "--token-file /run/secrets/token1", ""},
      {"authorization-header", "Authorization: Bearer <token>", ""},
      {"authorization-header", "Authorization: Bearer ${TOKEN}", ""},
      {"authorization-header", "curl -H \"Authorization: Bearer $API_TOKEN\" https://api.x.io", ""},
      {"authorization-header", "headers = {'Authorization': f'Bearer {token}'}", ""},
      {"authorization-header", "headers = {\"Authorization\": \"Bearer \" + access_token}", ""},
      {"authorization-header", "req.Header.Set(\"Authorization\", \"Bearer \"+token)", ""},
      {"authorization-header", "Authorization: Bearer YOUR_ACCESS_TOKEN", ""},
      {"authorization-header", "Authorization: Bearer test-token-12345", ""},
      {"authorization-header", "Authorization: Basic dXNlcjpwYXNz", ""},
      {"authorization-header", "Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==", ""},
      {"authorization-header", "Authorization: Bearer mF_9.B5f-4.1JqM", ""},
      {"authorization-header", "Authorization: Bearer ***", ""},
      {"generic-flag", "  --password PASSWORD   the password to use (default: $DB_PASSWORD)", ""},
      {"generic-flag", "  --token TOKEN         an API token; see --token-file", ""},
      {"generic-flag", "docker login -u ci --password $REGISTRY_PASSWORD ghcr.io", ""},
      {"generic-flag", "--password-file /run/secrets/db_password2", ""},
      {"generic-flag", "$ tool --api-key ${API_KEY} --db-pass \"$(cat /run/pw)\"", ""},
      {"generic-flag", "argparse: --secret-key SECRET_KEY_2 (default: None)", ""},
      {"cli-password", "mysql -u root -p app", ""},
      {"cli-password", "mysql -h db -P 3306 -u root -p$MYSQL_ROOT_PASSWORD app", ""},
      {"cli-password", "mysqldump -u root -p\"${DB_PASS}\" app", ""},
      {"cli-password", "mysql -uroot -proot", ""},
      {"cli-password", "sshpass -p \"$SSHPASS\" ssh host", ""},
      {"cli-password", "curl -u user:pass https://httpbin.org/basic-auth/user/pass", ""},
      {"cli-password", "curl -u \"$USER:$PASS\" https://x", ""},
      {"cli-password", "curl -u $TOKEN: https://api.x.io", ""},
      {"cli-password", "ssh -p 2222 deploy@host && docker run -p 8080:80 img", ""},
  };
}

TEST(DefaultRulesTest, EveryRuleHasATruePositiveAndAFalsePositive) {
  std::set<std::string> tp, fp;
  for (const auto& c : TruePositives()) tp.insert(c.rule);
  for (const auto& c : FalsePositives()) fp.insert(c.rule);
  for (const auto& id : Defaults().rule_ids()) {
    EXPECT_TRUE(tp.count(id)) << "no true-positive example for " << id;
    EXPECT_TRUE(fp.count(id)) << "no false-positive example for " << id;
  }
}

TEST(DefaultRulesTest, TruePositives) {
  for (const auto& c : TruePositives()) {
    auto found = Defaults().Scan(c.text);
    bool hit = false;
    for (const auto& f : found) hit |= f.rule_id == c.rule;
    EXPECT_TRUE(hit) << c.rule << " missed in: " << c.text;
    std::string out = Defaults().Scrub(c.text);
    EXPECT_EQ(out.find(c.secret), std::string::npos) << c.rule << ": " << out;
    EXPECT_NE(out.find("[REDACTED:"), std::string::npos) << out;
    EXPECT_EQ(Defaults().Scrub(out), out) << "not idempotent: " << c.text;
  }
}

TEST(DefaultRulesTest, FalsePositives) {
  for (const auto& c : FalsePositives()) {
    for (const auto& f : Defaults().Scan(c.text)) {
      ADD_FAILURE() << c.rule << " example flagged by " << f.rule_id << ": " << c.text << " -> "
                    << c.text.substr(f.start, f.end - f.start);
    }
    EXPECT_EQ(Defaults().Scrub(c.text), c.text);
  }
}

TEST(DefaultRulesTest, HardNegativesStayUntouched) {
  std::string text =
      "request_id=550e8400-e29b-41d4-a716-446655440000\n"
      "commit 3f786850e387550fdab836ed7e6dc881de23001b\n"
      "\"integrity\": "
      "\"sha512-9u/aB1F1Cy/1yH5e/f+hfNMeQPvEkWTF9k0Lwr5eEW1T6HQ9c0sSp6Gy1zbmXo4E/2uMA==\",\n"
      "<img "
      "src=\"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
      "YPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==\">\n"
      "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
      "AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n";
  EXPECT_EQ(Defaults().Scrub(text), text);
}

TEST(DefaultRulesTest, SecretSplitAcrossLines) {
  std::string text = "password =\n    \"Zq8-rT4!mv2W\"\n";
  std::string out = Defaults().Scrub(text);
  EXPECT_EQ(out.find("Zq8-rT4!mv2W"), std::string::npos) << out;
  std::string pem = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + R(kB64, 70) + "\n" + R(kB64, 70) +
                    "\n-----END OPENSSH PRIVATE KEY-----\n";
  out = Defaults().Scrub(pem);
  EXPECT_EQ(out.rfind("-----BEGIN OPENSSH PRIVATE KEY-----[REDACTED:private-key:", 0), 0u) << out;
  EXPECT_NE(out.find("]-----END OPENSSH PRIVATE KEY-----"), std::string::npos) << out;
}

TEST(DefaultRulesTest, SecretInsideEscapedJson) {
  std::string key = "sk-ant-api03-" + R(kUrlSafe, 93) + "AA";
  std::string gen = R(kAlnum, 32);
  std::string text = "{\"tool_result\":\"{\\\"api_key\\\": \\\"" + gen +
                     "\\\", \\\"anthropic\\\": \\\"" + key + "\\\"}\"}";
  std::string out = Defaults().Scrub(text);
  EXPECT_EQ(out.find(key), std::string::npos) << out;
  EXPECT_EQ(out.find(gen), std::string::npos) << out;
  EXPECT_NE(out.find("\\\"api_key\\\": \\\"[REDACTED:"), std::string::npos) << out;
}

TEST(DefaultRulesTest, SecretsInUrls) {
  std::string gh = "ghp_" + R(kAlnum, 36);
  std::string gcp = "AIza" + R(kUrlSafe, 35);
  std::string text = "https://" + gh +
                     "@github.com/org/repo.git and https://api.x.io/v1?key=" + gcp +
                     "&q=1 and amqp://guest:Gu3stPw9x@mq:5672/";
  std::string out = Defaults().Scrub(text);
  EXPECT_EQ(out.find(gh), std::string::npos) << out;
  EXPECT_EQ(out.find(gcp), std::string::npos) << out;
  EXPECT_EQ(out.find("Gu3stPw9x"), std::string::npos) << out;
  EXPECT_NE(out.find("@github.com/org/repo.git"), std::string::npos) << out;
}

TEST(DefaultRulesTest, SecretsNextToBase64Blocks) {
  std::string blob;
  for (int i = 0; i < 20; ++i) blob += R(kB64, 76) + "\n";
  std::string tok = "xoxb-" + R(kDigits, 12) + "-" + R(kDigits, 12) + "-" + R(kAlnum, 24);
  std::string text = "image: |\n" + blob + "slack: " + tok + "\nmore: |\n" + blob;
  std::string out = Defaults().Scrub(text);
  EXPECT_EQ(out.find(tok), std::string::npos) << out;
  // The base64 blocks themselves are not secrets.
  EXPECT_NE(out.find(blob), std::string::npos);
  EXPECT_EQ(out.size(),
            text.size() - tok.size() + std::string("[REDACTED:slack-token:xoxb]").size());
}

TEST(DefaultRulesTest, ManySecretsOnOneLineAndIdempotence) {
  std::string text;
  std::vector<std::string> secrets;
  for (int i = 0; i < 50; ++i) {
    secrets.push_back("ghp_" + R(kAlnum, 36));
    secrets.push_back("AKIA" + R(kAwsChars, 16));
    secrets.push_back(R(kAlnum, 12) + "1");
    text += secrets[secrets.size() - 3] + " " + secrets[secrets.size() - 2] +
            " password=" + secrets.back() + ";";
  }
  std::string out = Defaults().Scrub(text);
  for (const auto& s : secrets) EXPECT_EQ(out.find(s), std::string::npos) << s;
  EXPECT_EQ(Defaults().Scan(text).size(), secrets.size());
  EXPECT_EQ(Defaults().Scrub(out), out);
}

}  // namespace
}  // namespace contextd::scrub
