#include "tests/support/apiserver/tokens.h"

#include <random>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace wavepool::testing::apiserver {
namespace {

constexpr char kAdminUser[] = "wavepool-test-admin";

// 32 random bytes, base64url without padding: as unguessable as a real server's tokens, and
// free of characters a kubeconfig or header would need to quote.
std::string RandomToken() {
  std::random_device device;
  std::string bytes(32, '\0');
  for (char& c : bytes) c = static_cast<char>(device() & 0xff);
  return absl::WebSafeBase64Escape(bytes);
}

}  // namespace

UserInfo ServiceAccountUser(const std::string& ns, const std::string& name) {
  return UserInfo{
      absl::StrCat("system:serviceaccount:", ns, ":", name),
      {"system:serviceaccounts", absl::StrCat("system:serviceaccounts:", ns), kAuthenticatedGroup}};
}

TokenRegistry::TokenRegistry() : admin_token_(RandomToken()) {
  TokenOwner admin;
  admin.user = UserInfo{kAdminUser, {kMastersGroup, kAuthenticatedGroup}};
  absl::MutexLock lock(&mu_);
  tokens_.emplace(admin_token_, std::move(admin));
}

std::string TokenRegistry::IssueServiceAccountToken(const std::string& ns, const std::string& name,
                                                    const std::string& uid,
                                                    std::chrono::system_clock::time_point expires) {
  TokenOwner owner;
  owner.user = ServiceAccountUser(ns, name);
  owner.service_account_namespace = ns;
  owner.service_account_name = name;
  owner.service_account_uid = uid;
  owner.expires = expires;
  std::string token = RandomToken();
  absl::MutexLock lock(&mu_);
  tokens_.emplace(token, std::move(owner));
  return token;
}

std::optional<TokenOwner> TokenRegistry::Lookup(const std::string& token) const {
  absl::MutexLock lock(&mu_);
  const auto it = tokens_.find(token);
  if (it == tokens_.end()) return std::nullopt;
  return it->second;
}

}  // namespace wavepool::testing::apiserver
