// One way from a job's description to its plan. Every front end describes the job as PlanSources
// (`wavepool plan` from its flags and the files they name; the controller, local mode and the
// simulator from a TrainingJob's spec) and PlanFromSources resolves the inputs and plans, so that
// a job plans the same from the command line and in the cluster, and each rule lives here once:
//   model      a zoo model by name or alias (zoo.h), or the text of a layer table (layer_table.h);
//   compute    a measured profile's text, else the profile shipped for the model on the device,
//              else the analytical model (compute_source.h); or the analytical model alone;
//   device     a catalog name or alias (device.h);
//   network    the device's default, a preset, or a network file's text (comm.h);
//   optimizer  the optimizer state per parameter (OptimizerMoments, planner.h), inside MakePlan.
// Like the rest of the planner it does no I/O: the caller reads files or ConfigMaps and hands in
// their text, with the name its errors go under (a flag, a file's path, a spec field path).
//
// Everything here is a pure function of its arguments, safe to call from any number of threads
// at once. Arguments are only read during the call; a ResolvedPlan owns all it holds.
#ifndef WAVEPOOL_PLANNER_PLAN_PIPELINE_H_
#define WAVEPOOL_PLANNER_PLAN_PIPELINE_H_

#include <string>
#include <variant>

#include "absl/status/statusor.h"
#include "wavepool/planner/comm.h"
#include "wavepool/planner/compute_cost.h"
#include "wavepool/planner/device.h"
#include "wavepool/planner/model.h"
#include "wavepool/planner/planner.h"

namespace wavepool::planner {

// Each source below carries `field`: the name its errors are prefixed with ("<field>: <message>":
// "spec.model.layerTable: layer table line 3: ..."). An empty field leaves the resolver's own
// message, for a caller whose input the message already names (BuiltinModel's NotFound quotes the
// name it did not find).

// A model of the zoo, by name or alias ("vgg16", "wrn101_2").
struct BuiltinModelSource {
  std::string name;
  std::string field;  // "spec.model.name"
};

// A model described layer by layer: a layer table's text (layer_table.h).
struct LayerTableSource {
  std::string model_name;  // the graph's name: the file's stem, the ConfigMap's name
  std::string text;
  std::string field;  // "spec.model.layerTable", or the file's path
};

// Exactly one kind of model, by construction.
using ModelSource = std::variant<BuiltinModelSource, LayerTableSource>;

// The profile wavepool ships for the model on the device (FindBuiltinProfile), else the
// analytical model.
struct ShippedProfileSource {
  std::string field;  // names the model when the shipped profile does not fit it: "spec.model"
};

// Per-layer times the user measured: a profile CSV's text (profile.h). The layers it has no row
// for are costed by the analytical model.
struct MeasuredProfileSource {
  std::string text;
  std::string field;  // "spec.model.profile", or the file's path
};

// The analytical model alone, shipped profiles ignored.
struct AnalyticSource {};

struct ComputeSource {
  std::variant<ShippedProfileSource, MeasuredProfileSource, AnalyticSource> times;
  // The analytical model's precision, also for the layers a profile does not cover. The workers
  // train in mixed precision.
  Precision precision = Precision::kMixed;
};

// The network of the device's nodes (DefaultNetworkModel).
struct DefaultNetworkSource {};

// A preset by name (FindNetworkPreset): "default", "abci", or a device's name.
struct NetworkPresetSource {
  std::string name;
  std::string field;  // "--network"
};

// A network model's JSON or YAML text (ParseNetworkModel).
struct NetworkFileSource {
  std::string text;
  std::string field;  // the file's path
};

using NetworkSource = std::variant<DefaultNetworkSource, NetworkPresetSource, NetworkFileSource>;

// What a job is planned from.
struct PlanSources {
  ModelSource model;
  ComputeSource compute;
  std::string device;  // a catalog name or alias: "h100", "a100"
  NetworkSource network;
  PlanRequest request;  // GPUs, batch, switches, optimizer (planner.h)
};

// A plan and what it was planned on (front ends print the model, device and network with it).
struct ResolvedPlan {
  ModelGraph model;
  DeviceSpec device;
  NetworkModel network;  // as the collectives priced it (CommModel's normalised copy)
  // report.plan.layer_table holds a LayerTableSource's text (empty for a zoo model): the workers
  // build the very model that was planned from their Plan alone.
  PlanReport report;
};

// The model `source` names. NotFound (BuiltinModel's message) for an unknown zoo name;
// InvalidArgument (ParseLayerTable's message, naming the line) for a layer table that does not
// parse. Both prefixed with the source's field.
absl::StatusOr<ModelGraph> ResolveModel(const ModelSource& source);

// The compute cost model for `model` on `device` (ChooseComputeCost's order, or the analytical
// model alone). InvalidArgument prefixed with the MeasuredProfileSource's field when its text
// does not parse, holds no profile of the model or does not fit it; with the
// ShippedProfileSource's field when the shipped profile does not fit the model.
absl::StatusOr<ComputeCostModelPtr> ResolveComputeCost(const ComputeSource& source,
                                                       const ModelGraph& model,
                                                       const DeviceSpec& device);

// The network model `source` names for `device`. InvalidArgument prefixed with the source's
// field: for an unknown preset, FindNetworkPreset's message (the presets, the closest one) and
// that a JSON or YAML file would do too; for a file, ParseNetworkModel's message.
absl::StatusOr<NetworkModel> ResolveNetwork(const NetworkSource& source, const DeviceSpec& device);

// Resolves the device (FindDevice: NotFound naming it), the model, the compute cost and the
// network, in that order, then plans (MakePlan). The first error is returned as the resolver or
// MakePlan gives it: MakePlan's name the request's fields ("gpus: ...", "global batch ...").
absl::StatusOr<ResolvedPlan> PlanFromSources(const PlanSources& sources);

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_PLAN_PIPELINE_H_
