// Container image references as the container runtimes parse them (the grammar of
// github.com/distribution/reference, which containerd, CRI-O and the kubelet share):
//
//   reference   := name [ ":" tag ] [ "@" digest ]
//   name        := [ domain "/" ] path          at most 255 characters
//   domain      := host [ ":" port ]            the first component, when it has a '.' or a
//                                               ':', is "localhost", or has an upper-case letter
//   host        := component ( "." component )* | "[" IPv6 "]"
//   component   := [a-zA-Z0-9] | [a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]
//   path        := path-part ( "/" path-part )*
//   path-part   := [a-z0-9]+ ( ( "." | "_" | "__" | "-"+ ) [a-z0-9]+ )*
//   tag         := [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}
//   digest      := algorithm ":" hex            algorithm: [A-Za-z][A-Za-z0-9]* joined by
//                                               [+._-]; hex: at least 32 of [0-9a-fA-F]
//
// A pod whose image does not parse is refused by the API server (or never pulled): the
// controller checks a TrainingJob's images before it places the job, so that a typo fails the job
// at once instead of holding GPUs for a pod that never starts (template_policy.h).
//
// Pure functions, safe to call from any thread.
#ifndef WAVEPOOL_CONTROLLER_IMAGE_REFERENCE_H_
#define WAVEPOOL_CONTROLLER_IMAGE_REFERENCE_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace wavepool::controller {

struct ImageReference {
  std::string domain;  // "registry.example:5000"; empty for Docker Hub's short names.
  std::string path;    // "team/worker"
  std::string tag;     // "1.2"; empty when absent (the runtime pulls "latest").
  std::string digest;  // "sha256:<hex>"; empty when absent.
};

// Parses `reference`. InvalidArgument naming the reference, the part at fault and what would be
// valid (`image "Team/worker:1": path component "Team" must be lower-case letters and digits
// joined by '.', '_', '__' or '-'`).
absl::StatusOr<ImageReference> ParseImageReference(std::string_view reference);

}  // namespace wavepool::controller

#endif  // WAVEPOOL_CONTROLLER_IMAGE_REFERENCE_H_
