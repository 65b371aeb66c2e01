// Bearer tokens of the test API server: random, opaque strings kept in memory, each standing for
// a user. The admin token (group system:masters) is made once per registry; ServiceAccount
// tokens come from the TokenRequest API (POST .../serviceaccounts/<name>/token, as
// `kubectl create token` sends it) and carry the ServiceAccount's uid and an expiry, which the
// HTTP layer checks on every request (a deleted or re-created ServiceAccount's tokens stop
// working, as bound tokens do on a real cluster).
//
// Safe for concurrent use. Tokens do not survive the process (a restarted binary writes a new
// kubeconfig with a new admin token).
#ifndef WAVEPOOL_TESTS_SUPPORT_APISERVER_TOKENS_H_
#define WAVEPOOL_TESTS_SUPPORT_APISERVER_TOKENS_H_

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tests/support/apiserver/rbac.h"

namespace wavepool::testing::apiserver {

// What a token stands for.
struct TokenOwner {
  UserInfo user;
  // ServiceAccount tokens only (empty for the admin token).
  std::string service_account_namespace;
  std::string service_account_name;
  std::string service_account_uid;
  std::chrono::system_clock::time_point expires = std::chrono::system_clock::time_point::max();
};

// "system:serviceaccount:<ns>:<name>" with the groups system:serviceaccounts,
// system:serviceaccounts:<ns> and system:authenticated.
UserInfo ServiceAccountUser(const std::string& ns, const std::string& name);

class TokenRegistry {
 public:
  // Makes the admin token: user "wavepool-test-admin", groups system:masters and
  // system:authenticated.
  TokenRegistry();

  const std::string& admin_token() const { return admin_token_; }

  // A new token for the ServiceAccount `ns`/`name` (whose uid is `uid`), valid until `expires`.
  std::string IssueServiceAccountToken(const std::string& ns, const std::string& name,
                                       const std::string& uid,
                                       std::chrono::system_clock::time_point expires);

  // Who `token` stands for; nullopt for a token this registry never issued. Expiry and the
  // ServiceAccount's existence are the caller's to check.
  std::optional<TokenOwner> Lookup(const std::string& token) const;

 private:
  const std::string admin_token_;
  mutable absl::Mutex mu_;
  std::map<std::string, TokenOwner> tokens_ ABSL_GUARDED_BY(mu_);
};

}  // namespace wavepool::testing::apiserver

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_TOKENS_H_
