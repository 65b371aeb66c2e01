// Discovery as kube-apiserver 1.32 serves it to a client that accepts plain JSON: version.Info,
// APIVersions, APIGroupList/APIGroup and one APIResourceList per group version. The aggregated
// form (apidiscovery.k8s.io/v2) is not served; client-go falls back to these documents whenever
// the answer's Content-Type is plain application/json (docs/kube.md).
#include "tests/support/apiserver/discovery.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>

namespace wavepool::testing::apiserver {
namespace {

using nlohmann::json;

std::string GroupVersionOf(const ResourceInfo& resource) {
  return resource.group.empty() ? resource.version : resource.group + "/" + resource.version;
}

// ---- SHA-256 (FIPS 180-4), for storageVersionHash --------------------------------------------

constexpr std::array<std::uint32_t, 64> kSha256K = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

std::uint32_t RotateRight(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

void Sha256Block(const unsigned char* block, std::array<std::uint32_t, 8>& h) {
  std::array<std::uint32_t, 64> w{};
  for (int i = 0; i < 16; ++i) {
    w[i] = (std::uint32_t{block[4 * i]} << 24) | (std::uint32_t{block[4 * i + 1]} << 16) |
           (std::uint32_t{block[4 * i + 2]} << 8) | std::uint32_t{block[4 * i + 3]};
  }
  for (int i = 16; i < 64; ++i) {
    const std::uint32_t s0 =
        RotateRight(w[i - 15], 7) ^ RotateRight(w[i - 15], 18) ^ (w[i - 15] >> 3);
    const std::uint32_t s1 =
        RotateRight(w[i - 2], 17) ^ RotateRight(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  std::array<std::uint32_t, 8> v = h;
  for (int i = 0; i < 64; ++i) {
    const std::uint32_t s1 = RotateRight(v[4], 6) ^ RotateRight(v[4], 11) ^ RotateRight(v[4], 25);
    const std::uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
    const std::uint32_t t1 = v[7] + s1 + ch + kSha256K[i] + w[i];
    const std::uint32_t s0 = RotateRight(v[0], 2) ^ RotateRight(v[0], 13) ^ RotateRight(v[0], 22);
    const std::uint32_t maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
    const std::uint32_t t2 = s0 + maj;
    v = {t1 + t2, v[0], v[1], v[2], v[3] + t1, v[4], v[5], v[6]};
  }
  for (int i = 0; i < 8; ++i) h[i] += v[i];
}

std::array<unsigned char, 32> Sha256(const std::string& data) {
  std::array<std::uint32_t, 8> h = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::string padded = data;
  padded.push_back(static_cast<char>(0x80));
  while (padded.size() % 64 != 56) padded.push_back('\0');
  const std::uint64_t bits = static_cast<std::uint64_t>(data.size()) * 8;
  for (int i = 7; i >= 0; --i) padded.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
  for (std::size_t offset = 0; offset < padded.size(); offset += 64) {
    Sha256Block(reinterpret_cast<const unsigned char*>(padded.data() + offset), h);
  }
  std::array<unsigned char, 32> digest{};
  for (int i = 0; i < 32; ++i)
    digest[i] = static_cast<unsigned char>(h[i / 4] >> (24 - 8 * (i % 4)));
  return digest;
}

std::string Base64(const unsigned char* data, std::size_t size) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < size; i += 3) {
    const std::uint32_t n = (std::uint32_t{data[i]} << 16) |
                            (i + 1 < size ? std::uint32_t{data[i + 1]} << 8 : 0) |
                            (i + 2 < size ? std::uint32_t{data[i + 2]} : 0);
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(i + 1 < size ? kAlphabet[(n >> 6) & 63] : '=');
    out.push_back(i + 2 < size ? kAlphabet[n & 63] : '=');
  }
  return out;
}

// apiserver's storageversionhash.StorageVersionHash: the first 8 bytes of
// sha256("<group>/<version>/<kind>") of the storage version, base64-encoded.
std::string StorageVersionHash(const std::string& group, const std::string& version,
                               const std::string& kind) {
  const std::array<unsigned char, 32> digest = Sha256(group + "/" + version + "/" + kind);
  return Base64(digest.data(), 8);
}

// The version a resource is stored in: a CRD's version marked "storage" (every served version
// of one CRD shares it), the served version for built-ins.
std::string StorageVersionOf(const std::vector<ResourceInfo>& resources,
                             const ResourceInfo& resource) {
  if (resource.crd_name.empty()) return resource.version;
  for (const ResourceInfo& other : resources) {
    if (other.crd_name == resource.crd_name && other.crd_version.is_object() &&
        other.crd_version.value("storage", false)) {
      return other.version;
    }
  }
  return resource.version;
}

// ---- Version priority (apimachinery version.CompareKubeAwareVersionStrings) ------------------

struct KubeVersion {
  bool well_formed = false;
  int major = 0;
  int stability = 0;  // 2 GA, 1 beta, 0 alpha
  int minor = 0;
};

KubeVersion ParseKubeVersion(const std::string& v) {
  KubeVersion parsed;
  if (v.size() < 2 || v[0] != 'v' || v[1] < '1' || v[1] > '9') return parsed;
  std::size_t i = 1;
  while (i < v.size() && v[i] >= '0' && v[i] <= '9')
    parsed.major = parsed.major * 10 + (v[i++] - '0');
  if (i == v.size()) {
    parsed.stability = 2;
    parsed.well_formed = true;
    return parsed;
  }
  const std::string rest = v.substr(i);
  std::string digits;
  if (rest.rfind("alpha", 0) == 0) {
    parsed.stability = 0;
    digits = rest.substr(5);
  } else if (rest.rfind("beta", 0) == 0) {
    parsed.stability = 1;
    digits = rest.substr(4);
  } else {
    return parsed;
  }
  if (digits.empty() || digits[0] == '0' ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return parsed;
  }
  parsed.minor = std::atoi(digits.c_str());
  parsed.well_formed = true;
  return parsed;
}

// True when version `a` is preferred over `b`: well-formed before not; GA, then beta, then alpha;
// higher numbers first; the rest alphabetically.
bool HigherPriority(const std::string& a, const std::string& b) {
  const KubeVersion va = ParseKubeVersion(a);
  const KubeVersion vb = ParseKubeVersion(b);
  if (va.well_formed != vb.well_formed) return va.well_formed;
  if (!va.well_formed) return a < b;
  if (va.stability != vb.stability) return va.stability > vb.stability;
  if (va.major != vb.major) return va.major > vb.major;
  return va.minor > vb.minor;
}

// The served versions of `group`, most preferred first.
std::vector<std::string> VersionsOf(const std::vector<ResourceInfo>& resources,
                                    const std::string& group) {
  std::vector<std::string> versions;
  for (const ResourceInfo& resource : resources) {
    if (resource.group == group &&
        std::find(versions.begin(), versions.end(), resource.version) == versions.end()) {
      versions.push_back(resource.version);
    }
  }
  std::stable_sort(versions.begin(), versions.end(), HigherPriority);
  return versions;
}

json GroupVersionForDiscovery(const std::string& group, const std::string& version) {
  return {{"groupVersion", group + "/" + version}, {"version", version}};
}

json GroupEntry(const std::vector<ResourceInfo>& resources, const std::string& group) {
  json versions = json::array();
  const std::vector<std::string> names = VersionsOf(resources, group);
  for (const std::string& version : names)
    versions.push_back(GroupVersionForDiscovery(group, version));
  return {{"name", group},
          {"versions", std::move(versions)},
          {"preferredVersion", GroupVersionForDiscovery(group, names.front())}};
}

json ResourceEntry(const std::vector<ResourceInfo>& resources, const ResourceInfo& resource) {
  json entry = {{"name", resource.plural},
                {"singularName", resource.singular},
                {"namespaced", resource.namespaced},
                {"kind", resource.kind},
                {"verbs", resource.verbs}};
  // Go's omitempty: absent, not empty, when a resource has none.
  if (!resource.short_names.empty()) entry["shortNames"] = resource.short_names;
  if (!resource.categories.empty()) entry["categories"] = resource.categories;
  entry["storageVersionHash"] =
      StorageVersionHash(resource.group, StorageVersionOf(resources, resource), resource.kind);
  return entry;
}

// "<plural>/status": how discovery announces a status subresource (kubectl's --subresource and
// clients that update status look for it).
json StatusEntry(const ResourceInfo& resource) {
  return {{"name", resource.plural + "/status"},
          {"singularName", ""},
          {"namespaced", resource.namespaced},
          {"kind", resource.kind},
          {"verbs", {"get", "patch", "update"}}};
}

}  // namespace

json VersionInfo() {
  // Minor 32 matches kubectl 1.32 and 1.33 within the supported skew, so neither warns.
  return {{"major", "1"},
          {"minor", "32"},
          {"gitVersion", "v1.32.0"},
          {"gitCommit", "70d3cc986aa8221cd1dfb1121852688902d3bf53"},
          {"gitTreeState", "clean"},
          {"buildDate", "2024-12-11T17:59:15Z"},
          {"goVersion", "go1.23.3"},
          {"compiler", "gc"},
          {"platform", "linux/amd64"}};
}

json CoreApiVersions() {
  // APIVersions carries no apiVersion on the wire; the address is informational (clients reach
  // the server through their kubeconfig, never through this field).
  return {{"kind", "APIVersions"},
          {"versions", {"v1"}},
          {"serverAddressByClientCIDRs",
           {{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", "127.0.0.1:6443"}}}}};
}

json ApiGroupList(const std::vector<ResourceInfo>& resources) {
  json groups = json::array();
  std::vector<std::string> seen;
  for (const ResourceInfo& resource : resources) {
    if (resource.group.empty() ||
        std::find(seen.begin(), seen.end(), resource.group) != seen.end()) {
      continue;
    }
    seen.push_back(resource.group);
    groups.push_back(GroupEntry(resources, resource.group));
  }
  return {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", std::move(groups)}};
}

std::optional<json> ApiGroup(const std::vector<ResourceInfo>& resources, std::string_view group) {
  const std::string name(group);
  if (name.empty() || VersionsOf(resources, name).empty()) return std::nullopt;
  json document = {{"kind", "APIGroup"}, {"apiVersion", "v1"}};
  document.update(GroupEntry(resources, name));
  return document;
}

std::optional<json> ApiResourceList(const std::vector<ResourceInfo>& resources,
                                    std::string_view group, std::string_view version) {
  std::vector<const ResourceInfo*> served;
  for (const ResourceInfo& resource : resources) {
    if (resource.group == group && resource.version == version) served.push_back(&resource);
  }
  if (served.empty()) return std::nullopt;
  std::sort(served.begin(), served.end(),
            [](const ResourceInfo* a, const ResourceInfo* b) { return a->plural < b->plural; });
  json entries = json::array();
  for (const ResourceInfo* resource : served) {
    entries.push_back(ResourceEntry(resources, *resource));
    if (resource->status_subresource) entries.push_back(StatusEntry(*resource));
  }
  json document = {{"kind", "APIResourceList"}};
  // The core group's list (/api/v1) carries no apiVersion; the named groups' lists do.
  if (!group.empty()) document["apiVersion"] = "v1";
  document["groupVersion"] = GroupVersionOf(*served.front());
  document["resources"] = std::move(entries);
  return document;
}

}  // namespace wavepool::testing::apiserver
