// Loading a config: the stages in order (text and YAML limits, the tree
// against the model, libyang's validation, the typed Config, the semantic
// checks); each stage lives in its own file (see loader_detail.hpp).
#include "config/loader.hpp"

#include <fcntl.h>
#include <libyang/libyang.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <utility>

#include "config/loader_detail.hpp"
#include "config/schema.hpp"
#include "config/text.hpp"
#include "config/yaml_document.hpp"

namespace mcgw::config {

using detail::ErrorSink;
using detail::Location;
using detail::quoteName;
using detail::SourceMap;
using detail::YamlNode;

namespace {

// libyang 2.1 words an error's path as 'Data location "/a/b".' (or 'Schema
// location "...", data location "/a/b".'); the data path is the last quoted part.
std::string libyangDataPath(const char* text) {
  std::string s = text ? text : "";
  if (s.empty() || s.front() == '/') {
    return s;
  }
  size_t at = s.find("ata location \"");
  size_t end = s.rfind('"');
  if (at == std::string::npos || end == std::string::npos) {
    return "";
  }
  at += std::strlen("ata location \"");
  return end > at ? s.substr(at, end - at) : "";
}

// An error of libyang's own validation, placed at the YAML line it is about.
void reportValidationError(const ly_err_item* e, const lyd_node* tree, const SourceMap& map,
                           ErrorSink& sink) {
  std::string path = libyangDataPath(e->path);
  std::string msg = e->msg ? e->msg : "";
  if (e->apptag && std::strcmp(e->apptag, "data-not-unique") == 0) {
    // 'Unique data leaf(s) "vni" not satisfied in "/first" and "/second".': point
    // at the leaf of the second entry and say which entry has the value already.
    std::vector<std::string> parts;
    for (size_t i = msg.find('"'); i != std::string::npos; i = msg.find('"', i + 1)) {
      size_t j = msg.find('"', i + 1);
      if (j == std::string::npos) {
        break;
      }
      parts.push_back(msg.substr(i + 1, j - i - 1));
      i = j;
    }
    if (parts.size() == 3 && parts[0].find(' ') == std::string::npos) {
      const std::string& leaf = parts[0];
      path = parts[2] + "/" + leaf;
      std::string value;
      if (lyd_node* n = nullptr; lyd_find_path(tree, path.c_str(), 0, &n) == LY_SUCCESS && n) {
        value = " " + text::quote(lyd_get_value(n));
      }
      sink.at(map, path,
              "'" + leaf + "'" + value + " is already used by " + detail::boundPath(parts[1]) +
                  "; each entry needs its own '" + leaf + "'");
      return;
    }
  }
  sink.at(map, path, detail::boundLibyangMessage(e->msg));
}

std::string sizeMessage(uint64_t size, const char* what) {
  return std::string(what) + std::to_string(size) + " bytes; a config may be at most " +
         std::to_string(kMaxFileBytes) + " bytes (" + std::to_string(kMaxFileBytes >> 20) + " MiB)";
}

// A copy of node with its lines (and its children's) moved by shift, made
// in out.
const YamlNode* shifted(const YamlNode& node, int shift, std::deque<YamlNode>& out) {
  YamlNode& copy = out.emplace_back(node);
  copy.line += shift;
  for (const YamlNode*& child : copy.children) {
    child = shifted(*child, shift, out);
  }
  return &copy;
}

// root with the overlays' trees (by tenant) as its tenants' policies; the
// nodes it changes are copies made in out.  A tenant the file lacks is an
// error in sink.
const YamlNode* withPolicies(
    const YamlNode& root, const std::vector<std::pair<const PolicyOverlay*, const YamlNode*>>& by,
    std::deque<YamlNode>& out, ErrorSink& sink) {
  std::vector<bool> found(by.size(), false);
  const YamlNode* result = &root;
  const YamlNode* tenants = root.isMap() ? root.find("tenants") : nullptr;
  if (tenants && tenants->isSequence()) {
    YamlNode& seq = out.emplace_back(*tenants);
    for (const YamlNode*& item : seq.children) {
      const YamlNode* name = item->isMap() ? item->find("name") : nullptr;
      for (size_t o = 0; o < by.size(); ++o) {
        if (!name || !name->isScalar() || name->scalar != by[o].first->tenant) {
          continue;
        }
        found[o] = true;
        YamlNode& tenant = out.emplace_back(*item);
        bool replaced = false;
        for (size_t k = 0; k < tenant.size(); ++k) {
          if (tenant.key(k).isScalar() && tenant.key(k).scalar == "policy") {
            tenant.children[2 * k + 1] = by[o].second;
            replaced = true;
          }
        }
        if (!replaced) {
          YamlNode& key = out.emplace_back();
          key.kind = YamlNode::Kind::kScalar;
          key.scalar = "policy";
          key.line = by[o].first->first_line;
          key.column = 1;
          tenant.children.push_back(&key);
          tenant.children.push_back(by[o].second);
        }
        item = &tenant;
      }
    }
    YamlNode& top = out.emplace_back(root);
    for (size_t k = 0; k < top.size(); ++k) {
      if (&top.value(k) == tenants) {
        top.children[2 * k + 1] = &seq;
      }
    }
    result = &top;
  }
  for (size_t o = 0; o < by.size(); ++o) {
    if (!found[o]) {
      sink.at(Location{by[o].first->first_line, 1, ""}, "",
              "tenant " + quoteName(by[o].first->tenant) + " is not in the config");
    }
  }
  return result;
}

// Every stage on text, with the overlays' policies in place (none: a file).
LoadResult load(std::string_view text, const std::string& file_name,
                const std::vector<PolicyOverlay>& overlays) {
  ErrorSink sink(file_name);
  if (text.size() > kMaxFileBytes) {
    sink.at(Location{}, "", sizeMessage(text.size(), ""));
    return unexpected(sink.take());
  }
  const Schema& schema = Schema::instance();
  detail::YamlDocument yaml;
  const detail::YamlLimits limits{kMaxDepth,          kMaxNodes,      kMaxReported,
                                  schema.yamlDepth(), kMaxValueBytes, kMaxExpandedBytes};
  if (!yaml.read(text, limits, sink)) {
    return unexpected(sink.take());
  }
  const YamlNode* root = &yaml.root();
  std::deque<YamlNode> spliced;
  if (!overlays.empty()) {
    std::vector<std::pair<const PolicyOverlay*, const YamlNode*>> by;
    for (const PolicyOverlay& o : overlays) {
      // Each overlay is read with the limits of a file; its problems are
      // numbered from its first_line.
      detail::YamlDocument doc;
      ErrorSink own(file_name);
      const bool read = doc.read(o.text, limits, own);
      for (const ConfigError& e : own.take()) {
        sink.at(Location{e.line > 0 ? e.line + o.first_line - 1 : o.first_line, e.column, ""},
                e.path, e.message);
      }
      if (read) {
        by.emplace_back(&o, shifted(doc.root(), o.first_line - 1, spliced));
      }
    }
    if (!sink.empty()) {
      return unexpected(sink.take());
    }
    root = withPolicies(*root, by, spliced, sink);
    if (!sink.empty()) {
      return unexpected(sink.take());
    }
  }

  ly_err_clean(schema.context(), nullptr);
  SourceMap map;
  lyd_node* tree = detail::buildTree(*root, schema, sink, map);
  if (!sink.empty()) {
    return unexpected(sink.take());
  }

  // The model's remaining rules (and its defaults) come from libyang itself.
  ly_err_clean(schema.context(), nullptr);
  if (lyd_validate_all(&tree, schema.context(), LYD_VALIDATE_PRESENT, nullptr) != LY_SUCCESS) {
    for (const ly_err_item* e = ly_err_first(schema.context()); e; e = e->next) {
      if (e->level == LY_LLERR) {
        reportValidationError(e, tree, map, sink);
      }
    }
    lyd_free_all(tree);
    return unexpected(sink.take());
  }
  if (!tree) {
    // An empty file: create the implicit defaults so that mandatory checks ran.
    lyd_validate_all(&tree, schema.context(), 0, nullptr);
  }

  auto config = std::make_shared<Config>(detail::buildConfig(tree));
  lyd_free_all(tree);
  config->source = file_name;
  config->checksum = sha256Hex(text);

  ErrorSink warnings(file_name, "warnings");
  detail::checkSemantics(*config, map, sink, warnings);
  if (!sink.empty()) {
    return unexpected(sink.take());
  }
  config->warnings = warnings.take();
  return ConfigPtr(std::move(config));
}

}  // namespace

std::string sha256Hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  static constexpr const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

LoadResult loadConfigText(std::string_view text, const std::string& file_name) {
  return load(text, file_name, {});
}

LoadResult loadConfigTextWith(std::string_view text, const std::string& file_name,
                              const std::vector<PolicyOverlay>& overlays) {
  return load(text, file_name, overlays);
}

Result<std::string, ConfigErrors> readConfigFile(const std::string& path) {
  auto fail = [&](std::string message) {
    return unexpected(ConfigErrors{{path, 0, 0, "", std::move(message)}});
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return fail(std::string("cannot read: ") + std::strerror(errno));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return fail(std::string("cannot read: ") + std::strerror(errno));
  }
  // A directory opens but reads as nothing, which would look like an empty config.
  if (S_ISDIR(st.st_mode)) {
    return fail(std::string("cannot read: ") + std::strerror(EISDIR));
  }
  // The size is known before reading; a pipe or a device has none, so no
  // more than one byte beyond the limit is ever read.
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > kMaxFileBytes) {
    return fail(sizeMessage(static_cast<uint64_t>(st.st_size), ""));
  }
  std::string text;
  char buf[65536];
  while (text.size() <= kMaxFileBytes) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return fail(std::string("cannot read: ") + std::strerror(errno));
    }
    if (n == 0) {
      return text;
    }
    text.append(buf, static_cast<size_t>(n));
  }
  return fail(sizeMessage(kMaxFileBytes, "more than "));
}

LoadResult loadConfigFile(const std::string& path) {
  auto text = readConfigFile(path);
  if (!text) {
    return unexpected(text.error());
  }
  return loadConfigText(*text, path);
}

}  // namespace mcgw::config
