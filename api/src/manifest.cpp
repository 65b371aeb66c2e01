#include "wavepool/api/manifest.h"

#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "wavepool/api/defaults.h"
#include "wavepool/api/validation.h"
#include "wavepool/api/yaml.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::api {
namespace {

// The line of the field an error names, else where its document starts; 0 when unknown.
int LineOfError(const YamlDocument& document, const absl::Status& status) {
  const std::optional<std::string> path = FieldPathOf(status);
  const int line = path.has_value() ? document.lines.LineOf(*path) : 0;
  return line > 0 ? line : document.line;
}

// "document 2 (line 14)", or "document 2" when the line is unknown (document_number > 0);
// "line 14" or nothing for a single-object file (document_number == 0).
absl::Status InDocument(const absl::Status& status, const YamlDocument& document,
                        std::size_t document_number) {
  const int line = LineOfError(document, status);
  if (document_number == 0) {
    return line > 0 ? WithContext(status, absl::StrCat("line ", line)) : status;
  }
  std::string context = absl::StrCat("document ", document_number);
  if (line > 0) absl::StrAppend(&context, " (line ", line, ")");
  return WithContext(status, context);
}

struct ParsedJob {
  TrainingJob job;
  std::size_t document_number;  // 1-based.
  const YamlDocument* document;
};

absl::Status ParseJobs(const std::vector<YamlDocument>& documents, std::vector<ParsedJob>* jobs) {
  for (std::size_t i = 0; i < documents.size(); ++i) {
    if (documents[i].value.is_null()) continue;  // An empty document, as kubectl skips it.
    absl::StatusOr<TrainingJob> job = TrainingJob::FromJson(documents[i].value);
    if (!job.ok()) return InDocument(job.status(), documents[i], i + 1);
    jobs->push_back({*std::move(job), i + 1, &documents[i]});
  }
  if (jobs->empty()) return absl::InvalidArgumentError("manifest holds no TrainingJob");
  return absl::OkStatus();
}

// The one non-empty document of a single-object file.
absl::StatusOr<const YamlDocument*> SingleDocument(const std::vector<YamlDocument>& documents,
                                                   std::string_view kind) {
  const YamlDocument* found = nullptr;
  for (const YamlDocument& document : documents) {
    if (document.value.is_null()) continue;
    if (found != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "expected one ", std::string(kind), " document, found another at line ", document.line));
    }
    found = &document;
  }
  if (found == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("no ", std::string(kind), " document"));
  }
  return found;
}

// Decodes the single T in `text`.
template <typename T>
absl::StatusOr<T> ParseSingle(std::string_view text, std::string_view kind,
                              std::vector<YamlDocument>* documents, const YamlDocument** document) {
  WAVEPOOL_ASSIGN_OR_RETURN(std::vector<YamlDocument> parsed, ParseDocuments(text));
  *documents = std::move(parsed);
  WAVEPOOL_ASSIGN_OR_RETURN(const YamlDocument* single, SingleDocument(*documents, kind));
  *document = single;
  absl::StatusOr<T> object = T::FromJson((*document)->value);
  if (!object.ok()) return InDocument(object.status(), **document, 0);
  return object;
}

}  // namespace

absl::StatusOr<std::vector<TrainingJob>> ParseTrainingJobs(std::string_view text) {
  WAVEPOOL_ASSIGN_OR_RETURN(std::vector<YamlDocument> documents, ParseDocuments(text));
  std::vector<ParsedJob> parsed;
  WAVEPOOL_RETURN_IF_ERROR(ParseJobs(documents, &parsed));
  std::vector<TrainingJob> jobs;
  for (ParsedJob& entry : parsed) jobs.push_back(std::move(entry.job));
  return jobs;
}

absl::StatusOr<std::vector<TrainingJob>> LoadTrainingJobs(std::string_view text) {
  WAVEPOOL_ASSIGN_OR_RETURN(std::vector<YamlDocument> documents, ParseDocuments(text));
  std::vector<ParsedJob> parsed;
  absl::Status status = ParseJobs(documents, &parsed);
  if (!status.ok()) return status;
  std::map<std::string, std::size_t> document_of_job;
  std::vector<TrainingJob> jobs;
  for (ParsedJob& entry : parsed) {
    SetDefaults(&entry.job);
    status = Validate(entry.job);
    const std::string name = NamespacedName(entry.job.metadata);
    auto [it, inserted] = document_of_job.emplace(name, entry.document_number);
    if (status.ok() && !inserted) {
      status = WithContext(
          FieldPath("metadata.name")
              .Invalid(absl::StrCat("duplicates the TrainingJob in document ", it->second)),
          "TrainingJob " + name);
    }
    if (!status.ok()) return InDocument(status, *entry.document, entry.document_number);
    jobs.push_back(std::move(entry.job));
  }
  return jobs;
}

absl::StatusOr<GpuNode> ParseGpuNode(std::string_view text) {
  std::vector<YamlDocument> documents;
  const YamlDocument* document = nullptr;
  return ParseSingle<GpuNode>(text, kGpuNodeKind, &documents, &document);
}

absl::StatusOr<Plan> LoadPlan(std::string_view text) {
  std::vector<YamlDocument> documents;
  const YamlDocument* document = nullptr;
  WAVEPOOL_ASSIGN_OR_RETURN(Plan plan, ParseSingle<Plan>(text, kPlanKind, &documents, &document));
  absl::Status status = Validate(plan);
  if (!status.ok()) return InDocument(status, *document, 0);
  return plan;
}

}  // namespace wavepool::api
