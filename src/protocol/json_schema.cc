#include "protocol/json_schema.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "base/foreign_text.h"
#include "protocol/internal/strings.h"

namespace contextd::protocol {

using internal::Cat;
using internal::Msg;
namespace {

constexpr int kMaxRefDepth = 32;

bool IsKnownType(const std::string& t) {
  return t == "object" || t == "array" || t == "string" || t == "number" || t == "integer" ||
         t == "boolean" || t == "null";
}

bool IsInteger(const Json& v) {
  if (v.is_number_integer()) return true;
  if (v.is_number_float()) {
    double d = v.get<double>();
    return std::isfinite(d) && std::floor(d) == d;
  }
  return false;
}

bool HasType(const Json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "number") return v.is_number();
  if (type == "integer") return IsInteger(v);
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  return false;
}

const char* TypeName(const Json& v) {
  if (v.is_object()) return "object";
  if (v.is_array()) return "array";
  if (v.is_string()) return "string";
  if (IsInteger(v)) return "integer";
  if (v.is_number()) return "number";
  if (v.is_boolean()) return "boolean";
  return "null";
}

// Reads a non-negative integer keyword value (minLength, maxItems, ...); false if absent or not
// a non-negative integer (the keyword is then ignored).
bool Count(const Json& schema, const char* keyword, uint64_t* out) {
  auto it = schema.find(keyword);
  if (it == schema.end() || !it->is_number_integer()) return false;
  if (!it->is_number_unsigned() && it->get<int64_t>() < 0) return false;
  *out = it->get<uint64_t>();
  return true;
}

// A short rendering of a value for error messages.
std::string Short(const Json& v) {
  std::string s = base::DumpJson(v);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

class Validator {
 public:
  explicit Validator(const Json& root) : root_(root) {}

  absl::Status Validate(const Json& schema, const Json& v, const std::string& path, int depth) {
    if (schema.is_boolean()) {
      if (schema.get<bool>()) return absl::OkStatus();
      return Fail(path, "is not allowed here (schema false)");
    }
    if (!schema.is_object()) return absl::OkStatus();
    if (depth > kMaxRefDepth) return Fail(path, "schema nesting too deep");

    if (auto ref = schema.find("$ref"); ref != schema.end() && ref->is_string()) {
      const Json* target = Resolve(ref->get_ref<const std::string&>());
      if (target == nullptr) {
        return Fail(path, Cat("schema reference ", ref->get<std::string>(), " cannot be resolved"));
      }
      if (auto st = Validate(*target, v, path, depth + 1); !st.ok()) return st;
    }

    if (auto t = schema.find("type"); t != schema.end()) {
      bool ok = false;
      std::string expected;
      if (t->is_string()) {
        expected = t->get<std::string>();
        ok = HasType(v, expected);
      } else if (t->is_array()) {
        for (const auto& one : *t) {
          if (!one.is_string()) continue;
          if (!expected.empty()) expected += " or ";
          expected += one.get<std::string>();
          ok = ok || HasType(v, one.get<std::string>());
        }
      } else {
        ok = true;
      }
      if (!ok) return Fail(path, Cat("must be of type ", expected, " (type), got ", TypeName(v)));
    }

    if (auto e = schema.find("enum"); e != schema.end() && e->is_array()) {
      bool found = false;
      for (const auto& option : *e) found = found || option == v;
      if (!found) return Fail(path, Cat("must be one of ", Short(*e), " (enum), got ", Short(v)));
    }
    if (auto c = schema.find("const"); c != schema.end() && *c != v) {
      return Fail(path, Cat("must be ", Short(*c), " (const), got ", Short(v)));
    }

    if (v.is_number()) {
      const double x = v.get<double>();
      if (auto m = schema.find("minimum");
          m != schema.end() && m->is_number() && x < m->get<double>()) {
        return Fail(path, Cat("must be >= ", Short(*m), " (minimum), got ", Short(v)));
      }
      if (auto m = schema.find("maximum");
          m != schema.end() && m->is_number() && x > m->get<double>()) {
        return Fail(path, Cat("must be <= ", Short(*m), " (maximum), got ", Short(v)));
      }
      if (auto m = schema.find("exclusiveMinimum");
          m != schema.end() && m->is_number() && x <= m->get<double>()) {
        return Fail(path, Cat("must be > ", Short(*m), " (exclusiveMinimum), got ", Short(v)));
      }
      if (auto m = schema.find("exclusiveMaximum");
          m != schema.end() && m->is_number() && x >= m->get<double>()) {
        return Fail(path, Cat("must be < ", Short(*m), " (exclusiveMaximum), got ", Short(v)));
      }
    }

    if (v.is_string()) {
      const size_t n = CodePointCount(v.get_ref<const std::string&>());
      uint64_t limit = 0;
      if (Count(schema, "minLength", &limit) && n < limit) {
        return Fail(path, Cat("must be at least ", limit, " characters long (minLength), got ", n));
      }
      if (Count(schema, "maxLength", &limit) && n > limit) {
        return Fail(path, Cat("must be at most ", limit, " characters long (maxLength), got ", n));
      }
    }

    if (v.is_array()) {
      uint64_t limit = 0;
      if (Count(schema, "minItems", &limit) && v.size() < limit) {
        return Fail(path, Cat("must have at least ", limit, " items (minItems), got ", v.size()));
      }
      if (Count(schema, "maxItems", &limit) && v.size() > limit) {
        return Fail(path, Cat("must have at most ", limit, " items (maxItems), got ", v.size()));
      }
      if (auto items = schema.find("items"); items != schema.end()) {
        if (items->is_object() || items->is_boolean()) {
          for (size_t i = 0; i < v.size(); ++i) {
            auto st = Validate(*items, v[i], Cat(path, "[", i, "]"), depth + 1);
            if (!st.ok()) return st;
          }
        } else if (items->is_array()) {  // draft-07 tuple form
          for (size_t i = 0; i < v.size() && i < items->size(); ++i) {
            auto st = Validate((*items)[i], v[i], Cat(path, "[", i, "]"), depth + 1);
            if (!st.ok()) return st;
          }
        }
      }
    }

    if (v.is_object()) {
      if (auto req = schema.find("required"); req != schema.end() && req->is_array()) {
        for (const auto& name : *req) {
          if (name.is_string() && !v.contains(name.get_ref<const std::string&>())) {
            return Fail(Cat(path, ".", name.get<std::string>()),
                        "is required (required) but missing");
          }
        }
      }
      auto props = schema.find("properties");
      const bool has_props = props != schema.end() && props->is_object();
      auto additional = schema.find("additionalProperties");
      for (auto it = v.begin(); it != v.end(); ++it) {
        const std::string child = Cat(path, ".", it.key());
        if (has_props) {
          if (auto p = props->find(it.key()); p != props->end()) {
            if (auto st = Validate(*p, it.value(), child, depth + 1); !st.ok()) return st;
            continue;
          }
        }
        if (additional != schema.end()) {
          if (additional->is_boolean() && !additional->get<bool>()) {
            return Fail(child, "is not an allowed property (additionalProperties false)");
          }
          if (additional->is_object()) {
            if (auto st = Validate(*additional, it.value(), child, depth + 1); !st.ok()) return st;
          }
        }
      }
    }

    if (auto all = schema.find("allOf"); all != schema.end() && all->is_array()) {
      for (const auto& sub : *all) {
        if (auto st = Validate(sub, v, path, depth + 1); !st.ok()) return st;
      }
    }
    if (auto any = schema.find("anyOf"); any != schema.end() && any->is_array()) {
      bool ok = false;
      for (const auto& sub : *any) ok = ok || Validate(sub, v, path, depth + 1).ok();
      if (!ok) return Fail(path, "matches none of the allowed schemas (anyOf)");
    }
    if (auto one = schema.find("oneOf"); one != schema.end() && one->is_array()) {
      int matches = 0;
      for (const auto& sub : *one) matches += Validate(sub, v, path, depth + 1).ok() ? 1 : 0;
      if (matches != 1) {
        return Fail(path, Cat("must match exactly one schema (oneOf), matches ", matches));
      }
    }
    if (auto no = schema.find("not"); no != schema.end()) {
      if (Validate(*no, v, path, depth + 1).ok())
        return Fail(path, "matches a forbidden schema (not)");
    }
    return absl::OkStatus();
  }

 private:
  static absl::Status Fail(const std::string& path, std::string_view what) {
    return absl::InvalidArgumentError(Cat(path, ": ", what));
  }

  // Resolves "#" and "#/..." JSON pointers within the root schema; other references are not
  // fetched (nullptr).
  const Json* Resolve(const std::string& ref) const {
    if (ref == "#") return &root_;
    if (ref.rfind("#/", 0) != 0) return nullptr;
    const Json* node = &root_;
    size_t pos = 2;
    while (pos <= ref.size()) {
      size_t end = ref.find('/', pos);
      if (end == std::string::npos) end = ref.size();
      std::string token = ref.substr(pos, end - pos);
      // JSON pointer escapes.
      for (size_t i = 0; (i = token.find('~', i)) != std::string::npos; ++i) {
        if (i + 1 < token.size() && token[i + 1] == '1')
          token.replace(i, 2, "/");
        else if (i + 1 < token.size() && token[i + 1] == '0')
          token.replace(i, 2, "~");
      }
      if (node->is_object()) {
        auto it = node->find(token);
        if (it == node->end()) return nullptr;
        node = &*it;
      } else if (node->is_array()) {
        char* stop = nullptr;
        unsigned long index = std::strtoul(token.c_str(), &stop, 10);
        if (token.empty() || *stop != '\0' || index >= node->size()) return nullptr;
        node = &(*node)[index];
      } else {
        return nullptr;
      }
      pos = end + 1;
    }
    return node;
  }

  const Json& root_;
};

absl::Status CheckSchemaNode(const Json& schema, int depth) {
  if (schema.is_boolean()) return absl::OkStatus();
  if (!schema.is_object())
    return absl::InvalidArgumentError("a schema must be an object or a boolean");
  if (depth > kMaxRefDepth) return absl::InvalidArgumentError("schema nested too deeply");
  if (auto t = schema.find("type"); t != schema.end()) {
    if (t->is_string()) {
      if (!IsKnownType(t->get<std::string>())) {
        return absl::InvalidArgumentError(Cat("unknown schema type ", Short(*t)));
      }
    } else if (t->is_array()) {
      for (const auto& one : *t) {
        if (!one.is_string() || !IsKnownType(one.get<std::string>())) {
          return absl::InvalidArgumentError(Cat("unknown schema type ", Short(one)));
        }
      }
    } else {
      return absl::InvalidArgumentError("schema \"type\" must be a string or an array");
    }
  }
  if (auto props = schema.find("properties"); props != schema.end()) {
    if (!props->is_object()) return absl::InvalidArgumentError("\"properties\" must be an object");
    for (const auto& [name, sub] : props->items()) {
      if (auto st = CheckSchemaNode(sub, depth + 1); !st.ok()) {
        return absl::InvalidArgumentError(Cat("property ", name, ": ", st.message()));
      }
    }
  }
  if (auto req = schema.find("required"); req != schema.end() && !req->is_array()) {
    return absl::InvalidArgumentError("\"required\" must be an array");
  }
  return absl::OkStatus();
}

}  // namespace

size_t CodePointCount(std::string_view text) {
  size_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

absl::Status CheckSchema(const Json& schema) { return CheckSchemaNode(schema, 0); }

absl::Status ValidateJson(const Json& schema, const Json& value, std::string_view root_name) {
  Validator validator(schema);
  return validator.Validate(schema, value, std::string(root_name), 0);
}

Json SchemaDefaults(const Json& schema) {
  Json defaults = Json::object();
  if (!schema.is_object()) return defaults;
  auto props = schema.find("properties");
  if (props == schema.end() || !props->is_object()) return defaults;
  for (const auto& [name, sub] : props->items()) {
    if (sub.is_object()) {
      if (auto d = sub.find("default"); d != sub.end()) defaults[name] = *d;
    }
  }
  return defaults;
}

}  // namespace contextd::protocol
