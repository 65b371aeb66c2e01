// meta.k8s.io/v1 Tables as kube-apiserver renders them for `kubectl get`. The server renders
// every column (kubectl hides priority > 0 unless -o wide) and renders ages itself: a date cell
// is a duration string such as "5m" (duration.HumanDuration), never a timestamp.
#include "tests/support/apiserver/table.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "tests/support/apiserver/printer_columns.h"

namespace wavepool::testing::apiserver {
namespace {

using nlohmann::json;
using SystemClock = std::chrono::system_clock;

constexpr char kNameDescription[] =
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
constexpr char kCreationTimestampDescription[] =
    "CreationTimestamp is a timestamp representing the server time when this object was created. "
    "It is not guaranteed to be set in happens-before order across separate operations. Clients "
    "may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the "
    "system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

// ---- Values ------------------------------------------------------------------------------

const json& At(const json& object, const char* pointer) {
  static const json kNull;
  const json::json_pointer path(pointer);
  return object.contains(path) ? object.at(path) : kNull;
}

std::string StringAt(const json& object, const char* pointer) {
  const json& value = At(object, pointer);
  return value.is_string() ? value.get<std::string>() : "";
}

std::int64_t IntAt(const json& object, const char* pointer) {
  const json& value = At(object, pointer);
  return value.is_number_integer() ? value.get<std::int64_t>() : 0;
}

// RFC 3339 in UTC ("2024-05-01T10:00:00Z", with optional fractional seconds, as metav1.Time and
// metav1.MicroTime are written).
std::optional<SystemClock::time_point> ParseTimestamp(const json& value) {
  if (!value.is_string()) return std::nullopt;
  const std::string text = value.get<std::string>();
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6 ||
      consumed < 19) {
    return std::nullopt;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return SystemClock::from_time_t(timegm(&tm));
}

// apimachinery's duration.HumanDuration: two significant units at most, coarser as time passes.
std::string HumanDuration(std::chrono::duration<double> elapsed) {
  const auto seconds = static_cast<long long>(elapsed.count());
  // "<a><unit_a>" followed by "<b><unit_b>" unless b is 0.
  auto two = [](long long a, const char* unit_a, long long b, const char* unit_b) {
    std::string text = std::to_string(a) + unit_a;
    if (b != 0) text += std::to_string(b) + unit_b;
    return text;
  };
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 120) return std::to_string(seconds) + "s";
  const long long minutes = seconds / 60;
  if (minutes < 10) return two(minutes, "m", seconds % 60, "s");
  if (minutes < 180) return std::to_string(minutes) + "m";
  const long long hours = seconds / 3600;
  if (hours < 8) return two(hours, "h", minutes % 60, "m");
  if (hours < 48) return std::to_string(hours) + "h";
  if (hours < 24 * 8) return two(hours / 24, "d", hours % 24, "h");
  if (hours < 24 * 365 * 2) return std::to_string(hours / 24) + "d";
  if (hours < 24 * 365 * 8) return two(hours / 24 / 365, "y", (hours / 24) % 365, "d");
  return std::to_string(hours / 24 / 365) + "y";
}

// printers' translateTimestampSince: "<unknown>" for a missing timestamp.
std::string Since(const json& timestamp) {
  const std::optional<SystemClock::time_point> at = ParseTimestamp(timestamp);
  if (!at.has_value()) return "<unknown>";
  return HumanDuration(SystemClock::now() - *at);
}

std::string Trim(const std::string& text) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

std::string OrNone(std::string value) { return value.empty() ? "<none>" : value; }
std::string OrUnknown(std::string value) { return value.empty() ? "<unknown>" : value; }

// ---- Columns -----------------------------------------------------------------------------

json Column(const std::string& name, const std::string& type, const std::string& description,
            int priority = 0, const std::string& format = "") {
  return {{"name", name},
          {"type", type},
          {"format", format},
          {"description", description},
          {"priority", priority}};
}

json NameColumn() { return Column("Name", "string", kNameDescription, 0, "name"); }
json AgeColumn() { return Column("Age", "string", kCreationTimestampDescription); }
std::string Age(const json& object) { return Since(At(object, "/metadata/creationTimestamp")); }
std::string Name(const json& object) { return StringAt(object, "/metadata/name"); }

// ---- Pods (printers.printPod) ------------------------------------------------------------

json PodColumns() {
  return {
      NameColumn(),
      Column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
      Column("Status", "string", "The aggregate status of the containers in this pod."),
      Column("Restarts", "string",
             "The number of times the containers in this pod have been restarted and when "
             "the last container in this pod has restarted."),
      AgeColumn(),
      Column("IP", "string",
             "IP address allocated to the pod. Routable at least within the cluster.", 1),
      Column("Node", "string", "Name of the node this pod is scheduled onto.", 1),
      Column("Nominated Node", "string", "Node the scheduler nominated for this pod.", 1),
      Column("Readiness Gates", "string", "Pod readiness gates.", 1)};
}

struct ContainerSummary {
  std::string reason;
  int ready = 0;
  std::int64_t restarts = 0;
  std::optional<SystemClock::time_point> last_restart;
};

// Walks the container statuses last to first, as printPod does: the first one's waiting or
// terminated reason wins.
ContainerSummary SummarizeContainers(const json& pod, std::string reason) {
  ContainerSummary summary;
  bool has_running = false;
  const json& statuses = At(pod, "/status/containerStatuses");
  if (statuses.is_array()) {
    for (auto it = statuses.rbegin(); it != statuses.rend(); ++it) {
      const json& container = *it;
      summary.restarts += IntAt(container, "/restartCount");
      const auto finished = ParseTimestamp(At(container, "/lastState/terminated/finishedAt"));
      if (finished && (!summary.last_restart || *summary.last_restart < *finished)) {
        summary.last_restart = finished;
      }
      const std::string waiting = StringAt(container, "/state/waiting/reason");
      const json& terminated = At(container, "/state/terminated");
      if (!waiting.empty()) {
        reason = waiting;
      } else if (terminated.is_object() && !StringAt(terminated, "/reason").empty()) {
        reason = StringAt(terminated, "/reason");
      } else if (terminated.is_object()) {
        const std::int64_t signal = IntAt(terminated, "/signal");
        reason = signal != 0 ? "Signal:" + std::to_string(signal)
                             : "ExitCode:" + std::to_string(IntAt(terminated, "/exitCode"));
      } else if (At(container, "/ready") == true && At(container, "/state/running").is_object()) {
        has_running = true;
        ++summary.ready;
      }
    }
  }
  if (reason == "Completed" && has_running) {
    bool ready_condition = false;
    const json& conditions = At(pod, "/status/conditions");
    for (const json& condition : conditions.is_array() ? conditions : json::array()) {
      ready_condition |=
          StringAt(condition, "/type") == "Ready" && StringAt(condition, "/status") == "True";
    }
    reason = ready_condition ? "Running" : "NotReady";
  }
  summary.reason = reason;
  return summary;
}

// "<true>/<declared>": how many readiness gates have a True condition of their type.
std::string ReadinessGates(const json& pod) {
  const json& gates = At(pod, "/spec/readinessGates");
  if (!gates.is_array() || gates.empty()) return "<none>";
  const json& conditions = At(pod, "/status/conditions");
  int passed = 0;
  for (const json& gate : gates) {
    for (const json& condition : conditions.is_array() ? conditions : json::array()) {
      passed += StringAt(condition, "/type") == StringAt(gate, "/conditionType") &&
                StringAt(condition, "/status") == "True";
    }
  }
  return std::to_string(passed) + "/" + std::to_string(gates.size());
}

json PodCells(const json& pod) {
  const std::string phase = StringAt(pod, "/status/phase");
  std::string reason =
      StringAt(pod, "/status/reason").empty() ? phase : StringAt(pod, "/status/reason");
  ContainerSummary summary = SummarizeContainers(pod, reason);
  const bool deleting = At(pod, "/metadata/deletionTimestamp").is_string();
  if (deleting && StringAt(pod, "/status/reason") == "NodeLost") {
    summary.reason = "Unknown";
  } else if (deleting && phase != "Succeeded" && phase != "Failed") {
    summary.reason = "Terminating";
  }
  std::string restarts = std::to_string(summary.restarts);
  if (summary.restarts != 0 && summary.last_restart) {
    restarts += " (" + HumanDuration(SystemClock::now() - *summary.last_restart) + " ago)";
  }
  const json& containers = At(pod, "/spec/containers");
  const std::size_t total = containers.is_array() ? containers.size() : 0;
  return {Name(pod),
          std::to_string(summary.ready) + "/" + std::to_string(total),
          summary.reason,
          restarts,
          Age(pod),
          OrNone(StringAt(pod, "/status/podIPs/0/ip")),
          OrNone(StringAt(pod, "/spec/nodeName")),
          OrNone(StringAt(pod, "/status/nominatedNodeName")),
          ReadinessGates(pod)};
}

// ---- Nodes (printers.printNode) ----------------------------------------------------------

json NodeColumns() {
  return {
      NameColumn(),
      Column("Status", "string", "The status of the node"),
      Column("Roles", "string", "The roles of the node"),
      AgeColumn(),
      Column("Version", "string", "Kubelet Version reported by the node."),
      Column("Internal-IP", "string", "List of internal IPs of the node.", 1),
      Column("External-IP", "string", "List of external IPs of the node.", 1),
      Column(
          "OS-Image", "string",
          "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
          1),
      Column("Kernel-Version", "string",
             "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).", 1),
      Column("Container-Runtime", "string",
             "ContainerRuntime Version reported by the node through runtime remote API (e.g. "
             "containerd://1.4.2).",
             1)};
}

std::string NodeStatus(const json& node) {
  std::string status = "Unknown";
  const json& conditions = At(node, "/status/conditions");
  for (const json& condition : conditions.is_array() ? conditions : json::array()) {
    if (StringAt(condition, "/type") == "Ready") {
      status = StringAt(condition, "/status") == "True" ? "Ready" : "NotReady";
    }
  }
  if (At(node, "/spec/unschedulable") == true) status += ",SchedulingDisabled";
  return status;
}

// Roles from node-role.kubernetes.io/<role> labels and the kubernetes.io/role label.
std::string NodeRoles(const json& node) {
  static const std::string kPrefix = "node-role.kubernetes.io/";
  std::vector<std::string> roles;
  const json& labels = At(node, "/metadata/labels");
  if (!labels.is_object()) return "<none>";
  for (const auto& [key, value] : labels.items()) {
    if (key.rfind(kPrefix, 0) == 0 && key.size() > kPrefix.size()) {
      roles.push_back(key.substr(kPrefix.size()));
    } else if (key == "kubernetes.io/role" && value.is_string() &&
               !value.get<std::string>().empty()) {
      roles.push_back(value.get<std::string>());
    }
  }
  std::sort(roles.begin(), roles.end());
  roles.erase(std::unique(roles.begin(), roles.end()), roles.end());
  std::string joined;
  for (const std::string& role : roles) joined += (joined.empty() ? "" : ",") + role;
  return OrNone(joined);
}

std::string NodeAddress(const json& node, const std::string& type) {
  const json& addresses = At(node, "/status/addresses");
  for (const json& address : addresses.is_array() ? addresses : json::array()) {
    if (StringAt(address, "/type") == type) return StringAt(address, "/address");
  }
  return "<none>";
}

json NodeCells(const json& node) {
  return {Name(node),
          NodeStatus(node),
          NodeRoles(node),
          Age(node),
          StringAt(node, "/status/nodeInfo/kubeletVersion"),
          NodeAddress(node, "InternalIP"),
          NodeAddress(node, "ExternalIP"),
          OrUnknown(StringAt(node, "/status/nodeInfo/osImage")),
          OrUnknown(StringAt(node, "/status/nodeInfo/kernelVersion")),
          OrUnknown(StringAt(node, "/status/nodeInfo/containerRuntimeVersion"))};
}

// ---- Events (printers.printEvent) --------------------------------------------------------

json EventColumns() {
  return {
      Column("Last Seen", "string",
             "The time at which the most recent occurrence of this event was recorded."),
      Column("Type", "string",
             "Type of this event (Normal, Warning), new types could be added in the future"),
      Column("Reason", "string",
             "This should be a short, machine understandable string that gives the reason for the "
             "transition into the object's current status."),
      Column("Object", "string", "The object that this event is about."),
      Column("Subobject", "string",
             "If referring to a piece of an object instead of an entire object, this string should "
             "contain a valid JSON/Go field access statement.",
             1),
      Column("Source", "string",
             "The component reporting this event. Should be a short machine understandable string.",
             1),
      Column("Message", "string", "A human-readable description of the status of this operation."),
      Column("First Seen", "string",
             "The time at which the event was first recorded. (Time of server receipt is in "
             "TypeMeta.)",
             1),
      Column("Count", "string", "The number of times this event has occurred.", 1),
      Column("Name", "string", kNameDescription, 1, "name")};
}

std::string FirstNonEmpty(const std::string& a, const std::string& b) { return a.empty() ? b : a; }

json EventCells(const json& event) {
  std::string first = Since(At(event, "/firstTimestamp"));
  if (!At(event, "/firstTimestamp").is_string()) first = Since(At(event, "/eventTime"));
  std::string last =
      At(event, "/lastTimestamp").is_string() ? Since(At(event, "/lastTimestamp")) : first;
  std::int64_t count = IntAt(event, "/count");
  if (At(event, "/series").is_object()) {
    last = Since(At(event, "/series/lastObservedTime"));
    count = IntAt(event, "/series/count");
  } else if (count == 0) {
    count = 1;  // singleton events carry no count in the events.k8s.io API
  }
  std::string kind = StringAt(event, "/involvedObject/kind");
  std::transform(kind.begin(), kind.end(), kind.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::string involved = StringAt(event, "/involvedObject/name");
  const std::string component =
      FirstNonEmpty(StringAt(event, "/source/component"), StringAt(event, "/reportingComponent"));
  const std::string instance =
      FirstNonEmpty(StringAt(event, "/source/host"), StringAt(event, "/reportingInstance"));
  std::string source = component.empty()  ? ""
                       : instance.empty() ? component
                                          : component + ", " + instance;
  const std::string message = Trim(StringAt(event, "/message"));
  return {last,
          StringAt(event, "/type"),
          StringAt(event, "/reason"),
          involved.empty() ? kind : kind + "/" + involved,
          StringAt(event, "/involvedObject/fieldPath"),
          source,
          message,
          first,
          count,
          Name(event)};
}

// ---- The rest ----------------------------------------------------------------------------

std::int64_t MapSize(const json& object, const char* pointer) {
  const json& value = At(object, pointer);
  return value.is_object() ? static_cast<std::int64_t>(value.size()) : 0;
}

// The columns and one row's cells for a built-in resource.
struct BuiltinPrinter {
  json columns;
  json (*cells)(const json& object);
};

BuiltinPrinter PrinterFor(const ResourceInfo& resource) {
  const std::string& group = resource.group;
  const std::string& plural = resource.plural;
  if (group.empty() && plural == "pods") return {PodColumns(), PodCells};
  if (group.empty() && plural == "nodes") return {NodeColumns(), NodeCells};
  if (group.empty() && plural == "events") return {EventColumns(), EventCells};
  if (group.empty() && plural == "namespaces") {
    return {
        json{NameColumn(), Column("Status", "string", "The status of the namespace"), AgeColumn()},
        [](const json& o) {
          return json{Name(o), StringAt(o, "/status/phase"), Age(o)};
        }};
  }
  if (group.empty() && plural == "configmaps") {
    return {json{NameColumn(), Column("Data", "string", "Data contains the configuration data."),
                 AgeColumn()},
            [](const json& o) {
              return json{Name(o), MapSize(o, "/data") + MapSize(o, "/binaryData"), Age(o)};
            }};
  }
  if (group.empty() && plural == "secrets") {
    return {json{NameColumn(), Column("Type", "string", "The type of the secret"),
                 Column("Data", "string", "The number of entries in the secret."), AgeColumn()},
            [](const json& o) {
              return json{Name(o), StringAt(o, "/type"), MapSize(o, "/data"), Age(o)};
            }};
  }
  if (group == "coordination.k8s.io" && plural == "leases") {
    return {json{NameColumn(), Column("Holder", "string", "The holder of the lease."), AgeColumn()},
            [](const json& o) {
              return json{Name(o), StringAt(o, "/spec/holderIdentity"), Age(o)};
            }};
  }
  if (group == "apiextensions.k8s.io" && plural == "customresourcedefinitions") {
    // Served with the default table convertor: the creation time itself, in RFC 3339.
    return {json{NameColumn(), Column("Created At", "date", kCreationTimestampDescription)},
            [](const json& o) {
              return json{Name(o), At(o, "/metadata/creationTimestamp")};
            }};
  }
  return {json{NameColumn(), AgeColumn()}, [](const json& o) { return json{Name(o), Age(o)}; }};
}

// A CRD version's additionalPrinterColumns; Age alone when it declares none (apiextensions
// serves that default, and no Age when the CRD lists columns without one).
std::vector<PrinterColumn> CrdColumns(const ResourceInfo& resource) {
  const json& declared = At(resource.crd_version, "/additionalPrinterColumns");
  if (declared.is_array() && !declared.empty()) {
    absl::StatusOr<std::vector<PrinterColumn>> parsed = ParsePrinterColumns(declared);
    if (parsed.ok()) return *std::move(parsed);
  }
  PrinterColumn age;
  age.name = "Age";
  age.type = "date";
  age.description = kCreationTimestampDescription;
  age.json_path = ".metadata.creationTimestamp";
  return {age};
}

json RowObject(const ResourceInfo& resource, const json& object, IncludeObject include) {
  if (include == IncludeObject::kMetadata) {
    return {{"kind", "PartialObjectMetadata"},
            {"apiVersion", "meta.k8s.io/v1"},
            {"metadata", At(object, "/metadata")}};
  }
  json full = object;
  if (!full.contains("apiVersion")) {
    full["apiVersion"] =
        resource.group.empty() ? resource.version : resource.group + "/" + resource.version;
  }
  if (!full.contains("kind")) full["kind"] = resource.kind;
  return full;
}

}  // namespace

bool AcceptsTable(std::string_view accept) {
  // Any offered media range application/json with the parameters as=Table, v=v1 and
  // g=meta.k8s.io, in any order (v1beta1 Tables are no longer served).
  for (const absl::string_view range : absl::StrSplit(std::string(accept), ',')) {
    const std::vector<std::string> parts = absl::StrSplit(range, ';');
    if (Trim(parts.front()) != "application/json") continue;
    std::string as, version, group;
    for (std::size_t i = 1; i < parts.size(); ++i) {
      const std::string parameter = Trim(parts[i]);
      const std::size_t equals = parameter.find('=');
      if (equals == std::string::npos) continue;
      const std::string key = parameter.substr(0, equals);
      const std::string value = parameter.substr(equals + 1);
      if (key == "as") as = value;
      if (key == "v") version = value;
      if (key == "g") group = value;
    }
    if (as == "Table" && version == "v1" && group == "meta.k8s.io") return true;
  }
  return false;
}

absl::StatusOr<IncludeObject> ParseIncludeObject(std::string_view value) {
  if (value.empty() || value == "Metadata") return IncludeObject::kMetadata;
  if (value == "None") return IncludeObject::kNone;
  if (value == "Object") return IncludeObject::kObject;
  return absl::InvalidArgumentError("includeObject: unsupported value \"" + std::string(value) +
                                    "\": supported values: \"None\", \"Metadata\", \"Object\"");
}

json ToTable(const ResourceInfo& resource, const std::vector<json>& objects, const ListResult* list,
             IncludeObject include) {
  json columns;
  std::vector<PrinterColumn> crd_columns;
  BuiltinPrinter printer{json::array(), nullptr};
  if (!resource.crd_name.empty()) {
    crd_columns = CrdColumns(resource);
    columns = TableColumnDefinitions(crd_columns);
  } else {
    printer = PrinterFor(resource);
    columns = printer.columns;
  }
  json rows = json::array();
  for (const json& object : objects) {
    json row = {{"cells", printer.cells != nullptr ? printer.cells(object)
                                                   : TableCells(crd_columns, object)}};
    if (include != IncludeObject::kNone) row["object"] = RowObject(resource, object, include);
    rows.push_back(std::move(row));
  }
  json metadata = json::object();
  if (list != nullptr) {
    if (!list->resource_version.empty()) metadata["resourceVersion"] = list->resource_version;
    if (!list->continue_token.empty()) metadata["continue"] = list->continue_token;
    if (list->remaining_item_count) metadata["remainingItemCount"] = *list->remaining_item_count;
  } else if (objects.size() == 1 && At(objects.front(), "/metadata/resourceVersion").is_string()) {
    metadata["resourceVersion"] = objects.front()["metadata"]["resourceVersion"];
  }
  return {{"kind", "Table"},
          {"apiVersion", "meta.k8s.io/v1"},
          {"metadata", std::move(metadata)},
          {"columnDefinitions", std::move(columns)},
          {"rows", std::move(rows)}};
}

}  // namespace wavepool::testing::apiserver
