// Objects the api tests share: documents with every field set, and valid objects that each
// validation test breaks in one place.
#ifndef WAVEPOOL_TESTS_API_API_FIXTURES_H_
#define WAVEPOOL_TESTS_API_API_FIXTURES_H_

#include "nlohmann/json.hpp"
#include "wavepool/api/gpu_node.h"
#include "wavepool/api/plan.h"
#include "wavepool/api/training_job.h"

namespace wavepool::api::testing {

// A TrainingJob document with every field of spec, status and modelled metadata set, plus
// metadata the type does not model (managedFields, selfLink). Decodes, but is not valid: it
// sets Foreground- and Background-only fields and both model.name and model.layerTable.
inline nlohmann::json EveryFieldTrainingJob() {
  return nlohmann::json::parse(R"({
    "apiVersion": "wavepool.dev/v1alpha1",
    "kind": "TrainingJob",
    "metadata": {
      "name": "vgg", "generateName": "vgg-", "namespace": "team-a", "uid": "1f0c-42",
      "resourceVersion": "917", "generation": 3,
      "creationTimestamp": "2026-05-01T10:00:00Z", "deletionTimestamp": "2026-05-02T10:00:00Z",
      "labels": {"kueue.x-k8s.io/queue-name": "gpu", "app": "vgg"},
      "annotations": {"note": "on", "n": "12"},
      "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                           "uid": "u-1", "controller": true, "blockOwnerDeletion": false}],
      "finalizers": ["wavepool.dev/cleanup"],
      "managedFields": [{"manager": "kubectl", "operation": "Apply",
                         "fieldsV1": {"f:spec": {"f:gpus": {}}}}],
      "selfLink": "/apis/wavepool.dev/v1alpha1/namespaces/team-a/trainingjobs/vgg",
      "deletionGracePeriodSeconds": 30
    },
    "spec": {
      "role": "Foreground",
      "model": {"name": "vgg16", "layerTable": {"configMap": "vgg-layers", "key": "table.csv"},
                "profile": {"configMap": "vgg-profile", "key": "a100.json"}},
      "globalBatchSize": 32, "gpus": 8, "steps": 1000, "epochs": 2, "datasetSamples": 50000,
      "optimizer": "AdamW", "learningRate": 0.001,
      "parallelism": {"strategy": "BurstParallel", "amplificationLimit": 2.5,
                      "gpuCounts": "AllIntegers", "tickTock": "On"},
      "dataMovement": {"cpuSplit": "On", "preload": "Off", "weightCompression": "Auto"},
      "collocation": {"maxForegroundSlowdown": 1.1, "allowBackground": false,
                      "maxBatchSize": 16},
      "checkpoint": {"path": "/ckpt/vgg", "intervalSteps": 100, "intervalSeconds": 60.5},
      "template": {"metadata": {"labels": {"a": "b"}},
                   "spec": {"containers": [{"name": "worker", "image": "w:1",
                                            "resources": {"limits": {"cpu": "2"}}}]}},
      "suspend": true,
      "backoffLimit": 4
    },
    "status": {
      "phase": "Running",
      "conditions": [
        {"type": "Planned", "status": "True", "observedGeneration": 3,
         "lastTransitionTime": "2026-05-01T10:00:05Z", "reason": "PlanFound",
         "message": "BurstParallel on 8 GPUs"},
        {"type": "Degraded", "status": "False", "lastTransitionTime": "2026-05-01T10:00:06Z",
         "reason": "AsExpected", "message": ""}
      ],
      "observedGeneration": 3,
      "plan": {"strategy": "BurstParallel", "predictedIterationSeconds": 0.125,
               "memoryPerGpuBytes": 12884901888, "stageGpus": [8, 4, 1],
               "amplification": 1.75},
      "gpus": 8,
      "placement": [{"pod": "vgg-0", "node": "node-a",
                     "gpuUUIDs": ["GPU-aaaa", "GPU-bbbb"]}],
      "progress": {"step": 420, "samplesPerSecond": 256.5, "iterationSeconds": 0.13,
                   "foregroundSlowdown": 1.04},
      "restarts": 2,
      "gangGeneration": 3
    }
  })");
}

// A GPUNode document with every field set.
inline nlohmann::json EveryFieldGpuNode() {
  return nlohmann::json::parse(R"({
    "apiVersion": "wavepool.dev/v1alpha1",
    "kind": "GPUNode",
    "metadata": {"name": "node-a", "resourceVersion": "5", "managedFields": [{"manager": "agent"}]},
    "spec": {"nodeName": "node-a"},
    "status": {
      "gpus": [
        {"index": 0, "uuid": "GPU-aaaa", "model": "NVIDIA A100-SXM4-80GB",
         "memoryBytes": 85899345920,
         "occupancy": {"foreground": 0.75, "background": 0.2},
         "memoryWave": {"peakBytes": 60000000000, "troughBytes": 20000000000,
                        "periodSeconds": 0.25, "phaseOffsetSeconds": 0.125,
                        "headroomBytes": 25899345920},
         "tasks": [{"namespace": "team-a", "job": "vgg", "pod": "vgg-0", "role": "Foreground",
                    "pid": 4242, "progress": {"step": 420, "samplesPerSecond": 256.5,
                                              "iterationSeconds": 0.13,
                                              "foregroundSlowdown": 1.04}},
                   {"namespace": "team-b", "job": "rn", "pod": "rn-0", "role": "Background",
                    "pid": 4343}]},
        {"index": 1, "uuid": "GPU-bbbb", "model": "NVIDIA A100-SXM4-80GB",
         "memoryBytes": 85899345920, "occupancy": {"foreground": 0.0, "background": 0.0},
         "tasks": []}
      ],
      "agentVersion": "0.1.0",
      "heartbeatTime": "2026-05-01T10:00:00Z",
      "conditions": [{"type": "Ready", "status": "True",
                      "lastTransitionTime": "2026-05-01T09:00:00Z", "reason": "AgentRunning",
                      "message": "2 GPUs"}],
      "message": "NVML 12.4"
    }
  })");
}

// A valid burst-parallel plan on 8 GPUs: stage 0 on 8 GPUs, stage 1 on 4, stage 2 on 1.
inline nlohmann::json ValidPlanJson() {
  return nlohmann::json::parse(R"({
    "apiVersion": "wavepool.dev/v1alpha1", "kind": "Plan",
    "job": "default/vgg", "model": "vgg16", "device": "a100",
    "strategy": "BurstParallel", "globalBatchSize": 32, "gpus": 8,
    "amplificationLimit": 2.0, "gpuCounts": "PowersOfTwo",
    "waves": 1, "waveOffsetFraction": 0.0, "wavePlacement": "Stationary",
    "stages": [
      {"index": 0, "layers": ["conv1", "relu1"], "gpus": 8, "ranks": [0, 1, 2, 3, 4, 5, 6, 7],
       "perGpuBatch": 4, "dependsOn": [], "concurrentWith": [], "predictedSeconds": 0.01},
      {"index": 1, "layers": ["conv2"], "gpus": 4, "ranks": [0, 1, 2, 3], "perGpuBatch": 8,
       "dependsOn": [0], "concurrentWith": [], "predictedSeconds": 0.02},
      {"index": 2, "layers": ["fc"], "gpus": 1, "ranks": [0], "perGpuBatch": 32,
       "dependsOn": [1], "concurrentWith": [], "predictedSeconds": 0.005}
    ],
    "transfers": [
      {"fromStage": 0, "toStage": 1, "bytesPerSample": 802816, "samples": 16,
       "predictedSeconds": 0.0004},
      {"fromStage": 1, "toStage": 2, "bytesPerSample": 16384, "samples": 24,
       "predictedSeconds": 0.0001}
    ],
    "syncGroups": [
      {"stage": 0, "ranks": [0, 1, 2, 3, 4, 5, 6, 7], "bytes": 7168, "algorithm": "ring",
       "predictedSeconds": 0.00005},
      {"stage": 1, "ranks": [0, 1, 2, 3], "bytes": 147712, "algorithm": "tree",
       "predictedSeconds": 0.0001}
    ],
    "dataMovement": {"cpuSplit": true, "preload": true, "weightCompression": false},
    "predictions": {"iterationSeconds": 0.0356, "computeSeconds": 0.035,
                    "communicationSeconds": 0.00065, "gpuSeconds": 0.165,
                    "amplification": 1.65, "memoryPerGpuBytes": 4294967296,
                    "backgroundIdleGpuSeconds": 0.12, "samplesPerSecond": 898.9},
    "training": {"optimizer": "Adam", "learningRate": 0.001, "steps": 100, "seed": 7,
                 "checkpointIntervalSteps": 50, "checkpointIntervalSeconds": 600.0,
                 "datasetSamples": 50000},
    "layerTable": ""
  })");
}

// A valid, defaulted Foreground job: vgg16 on 8 GPUs, batch 32, 100 steps.
TrainingJob ValidForegroundJob();

// A valid, defaulted Background job: resnet50 on 1 GPU with a checkpoint path.
TrainingJob ValidBackgroundJob();

// A valid GPUNode with two GPUs.
GpuNode ValidGpuNode();

}  // namespace wavepool::api::testing

#endif  // WAVEPOOL_TESTS_API_API_FIXTURES_H_
