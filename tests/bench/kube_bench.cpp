// The Kubernetes client's controller side at cluster scale, against the in-process test API
// server over loopback HTTP:
//  - BM_InformerSync: a fresh SharedInformer over every Pod, from Run to HasSynced, paged (500) and
//    unpaged; also the heap the synced store holds per object.
//  - BM_WatchFanIn: with an informer synced, N updates (one per Pod) written by a second client
//    (writer 0, merge PATCH over HTTP) or straight into the server's store (writer 1, which leaves
//    only the watch path: server encode, HTTP stream, decode, store, handler); timed until the
//    informer's update handler has seen all N.
//  - BM_WorkQueue / BM_WorkQueueDuplicates: N distinct keys through Add/Get/Done with 1, 2 or 4
//    workers; then every key added 10 times while the workers run (de-duplication).
//  - BM_Store*: lookups in the synced informer's store.
// Sizes are 1,000 and 10,000 objects; --kube_bench_objects=100 picks others (the smoke test).
// Figures: docs/performance.md.
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "benchmark/benchmark.h"
#include "nlohmann/json.hpp"
#include "tests/support/apiserver/test_server.h"
#include "wavepool/kube/client.h"
#include "wavepool/kube/informer.h"
#include "wavepool/kube/resource.h"
#include "wavepool/kube/work_queue.h"

namespace wavepool::kube {
namespace {

using testing::apiserver::ResourceInfo;
using testing::apiserver::TestApiServer;
using SteadyClock = std::chrono::steady_clock;

constexpr int kNamespaces = 20;  // objects spread evenly: N/20 per namespace
constexpr int kApps = 50;        // label app=app-<i % 50>: N/50 per value
constexpr auto kGiveUp = std::chrono::seconds(120);

std::string NamespaceName(int i) { return "team-" + std::to_string(i % kNamespaces); }

// A training worker's Pod as a controller sees it: about 1.5 KiB of JSON once the server has
// added uid, timestamps and resourceVersion.
nlohmann::json BenchPod(int i) {
  const std::string job = "job-" + std::to_string(i / 8);
  nlohmann::json env = nlohmann::json::array();
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"WAVEPOOL_JOB", job},
                                                        {"MASTER_ADDR", job + "-0." + job},
                                                        {"MASTER_PORT", "29500"},
                                                        {"WORLD_SIZE", "8"},
                                                        {"RANK", std::to_string(i % 8)},
                                                        {"NCCL_DEBUG", "WARN"}}) {
    env.push_back({{"name", name}, {"value", value}});
  }
  const nlohmann::json resources = {{"cpu", "8"}, {"memory", "64Gi"}, {"nvidia.com/gpu", "1"}};
  nlohmann::json container = {
      {"name", "trainer"},
      {"image", "registry.example.com/wavepool/trainer:1.4.2"},
      {"command", {"python3", "-m", "wavepool_train"}},
      {"args", {"--config", "/etc/wavepool/job.yaml", "--checkpoint-dir", "/data/checkpoints"}},
      {"env", env},
      {"resources", {{"limits", resources}, {"requests", resources}}},
      {"ports", {{{"name", "rendezvous"}, {"containerPort", 29500}, {"protocol", "TCP"}}}},
      {"volumeMounts",
       {{{"name", "data"}, {"mountPath", "/data"}},
        {{"name", "config"}, {"mountPath", "/etc/wavepool"}, {"readOnly", true}}}}};
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", "trainer-" + std::to_string(i)},
            {"namespace", NamespaceName(i)},
            {"labels",
             {{"app", "app-" + std::to_string(i % kApps)},
              {"wavepool.dev/job", job},
              {"wavepool.dev/role", "worker"}}},
            {"annotations", {{"wavepool.dev/plan", "dp=8,pp=1,batch=32"}}}}},
          {"spec",
           {{"containers", {container}},
            {"volumes",
             {{{"name", "data"}, {"persistentVolumeClaim", {{"claimName", job + "-data"}}}},
              {{"name", "config"}, {"configMap", {{"name", job + "-config"}}}}}},
            {"restartPolicy", "Never"},
            {"schedulerName", "default-scheduler"},
            {"tolerations",
             {{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}}}}}};
}

// Bytes the allocator has handed out and not had back, over every arena (glibc's mallinfo2).
std::int64_t HeapInUseBytes() {
  const struct mallinfo2 info = mallinfo2();
  return static_cast<std::int64_t>(info.uordblks + info.hblkhd);
}

std::int64_t ResidentBytes() {
  long pages = 0;
  long resident = 0;
  if (FILE* statm = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(statm, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(statm);
  }
  return static_cast<std::int64_t>(resident) * sysconf(_SC_PAGESIZE);
}

// CPU time of the whole process (every thread: the server's, the client's, the informer's), which
// a busy shared machine does not inflate the way it inflates wall time.
double ProcessCpuSeconds() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double SecondsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

SharedInformer::Options QuietOptions(std::int64_t page_size) {
  SharedInformer::Options options;
  options.page_size = page_size;
  options.log = [](std::string_view line) {
    std::fprintf(stderr, "informer: %.*s\n", static_cast<int>(line.size()), line.data());
  };
  return options;
}

// A server holding N Pods, a client that writes, and an informer over every Pod that counts the
// updates it is told of. One per size, built on first use and kept for the whole run.
class Cluster {
 public:
  static Cluster* ForSize(int objects, std::string* error) {
    auto& cluster = All()[objects];
    if (cluster == nullptr) {
      auto built = std::make_unique<Cluster>();
      *error = built->Build(objects);
      if (!error->empty()) return nullptr;
      cluster = std::move(built);
    }
    return cluster.get();
  }

  // Stops every informer and server. Called before main returns: the HTTP client's thread pool
  // is a function-local static built after the clusters, so it would be gone when static
  // destruction reached them, and an informer's Stop would wait forever for its watch.
  static void DestroyAll() { All().clear(); }

  // The first error, or "".
  std::string Build(int objects) {
    objects_ = objects;
    TestApiServer::Options options;
    // The creates and one round of updates fit in the history: a watch never starts too late.
    options.store.history_size = 2 * static_cast<std::size_t>(objects) + 1000;
    auto server = TestApiServer::Start(options);
    if (!server.ok()) return server.status().ToString();
    server_ = std::move(*server);
    auto& store = server_->store();
    const auto namespaces = store.FindResource("", "v1", "namespaces");
    const auto pods = store.FindResource("", "v1", "pods");
    if (!namespaces || !pods) return "the server serves no namespaces or pods";
    pods_ = *pods;
    for (int i = 0; i < kNamespaces; ++i) {
      nlohmann::json ns = {
          {"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", NamespaceName(i)}}}};
      auto created = store.Create(*namespaces, "", std::move(ns), {});
      if (!created.ok()) return created.status().ToString();
    }
    for (int i = 0; i < objects; ++i) {
      auto created = store.Create(pods_, NamespaceName(i), BenchPod(i), {});
      if (!created.ok()) return created.status().ToString();
      if (i == 0) object_bytes_ = static_cast<std::int64_t>(created->object.dump().size());
    }
    ClientConfig config;
    config.server = server_->url();
    auto writer = Client::Connect(config);
    auto reader = Client::Connect(config);
    if (!writer.ok()) return writer.status().ToString();
    if (!reader.ok()) return reader.status().ToString();
    writer_ = std::move(*writer);
    reader_ = std::move(*reader);
    return StartInformer();
  }

  std::string StartInformer() {
    informer_ = std::make_unique<SharedInformer>(*reader_, kPods, QuietOptions(500));
    ResourceEventHandlers handlers;
    handlers.on_update = [this](const nlohmann::json&, const nlohmann::json&) {
      std::lock_guard<std::mutex> lock(mu_);
      if (++updates_seen_ >= updates_wanted_) cv_.notify_all();
    };
    if (auto status = informer_->AddEventHandler(handlers); !status.ok()) return status.ToString();
    informer_->Run();
    if (!informer_->WaitForSync(kGiveUp)) return "the informer did not sync";
    return "";
  }

  // Starts counting updates from zero.
  void ExpectUpdates(std::int64_t count) {
    std::lock_guard<std::mutex> lock(mu_);
    updates_seen_ = 0;
    updates_wanted_ = count;
  }
  bool WaitForUpdates() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kGiveUp, [this] { return updates_seen_ >= updates_wanted_; });
  }

  int objects() const { return objects_; }
  std::int64_t object_bytes() const { return object_bytes_; }
  TestApiServer& server() { return *server_; }
  const ResourceInfo& pods() const { return pods_; }
  Client& writer() { return *writer_; }
  Client& reader() { return *reader_; }
  const Store& store() const { return informer_->store(); }

 private:
  static std::map<int, std::unique_ptr<Cluster>>& All() {
    static auto* clusters = new std::map<int, std::unique_ptr<Cluster>>();
    return *clusters;
  }

  int objects_ = 0;
  std::int64_t object_bytes_ = 0;
  std::unique_ptr<TestApiServer> server_;
  ResourceInfo pods_;
  std::unique_ptr<Client> writer_;
  std::unique_ptr<Client> reader_;
  std::unique_ptr<SharedInformer> informer_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::int64_t updates_seen_ = 0;     // guarded by mu_
  std::int64_t updates_wanted_ = -1;  // guarded by mu_; never reached until ExpectUpdates
};

Cluster* GetCluster(benchmark::State& state) {
  std::string error;
  Cluster* cluster = Cluster::ForSize(static_cast<int>(state.range(0)), &error);
  if (cluster == nullptr) state.SkipWithError(("cluster setup failed: " + error).c_str());
  return cluster;
}

// Args: objects, page size (0: one unpaged list).
void BM_InformerSync(benchmark::State& state) {
  Cluster* cluster = GetCluster(state);
  if (cluster == nullptr) return;
  const std::int64_t page_size = state.range(1);
  std::int64_t max_heap_delta = 0;
  std::int64_t max_rss_delta = 0;
  double cpu_seconds = 0;
  for (auto _ : state) {
    std::atomic<std::int64_t> adds{0};
    auto informer =
        std::make_unique<SharedInformer>(cluster->reader(), kPods, QuietOptions(page_size));
    ResourceEventHandlers handlers;
    handlers.on_add = [&adds](const nlohmann::json&) { adds.fetch_add(1); };
    if (!informer->AddEventHandler(handlers).ok()) {
      state.SkipWithError("AddEventHandler failed");
      return;
    }
    const std::int64_t heap_before = HeapInUseBytes();
    const std::int64_t rss_before = ResidentBytes();
    const double cpu_before = ProcessCpuSeconds();
    const auto start = SteadyClock::now();
    informer->Run();
    const bool synced = informer->WaitForSync(kGiveUp);
    state.SetIterationTime(SecondsSince(start));
    cpu_seconds += ProcessCpuSeconds() - cpu_before;
    max_heap_delta = std::max(max_heap_delta, HeapInUseBytes() - heap_before);
    max_rss_delta = std::max(max_rss_delta, ResidentBytes() - rss_before);
    informer.reset();
    if (!synced || adds.load() != cluster->objects()) {
      state.SkipWithError("the informer did not sync every object");
      return;
    }
  }
  const double objects = static_cast<double>(cluster->objects());
  state.SetItemsProcessed(state.iterations() * cluster->objects());
  state.counters["object_bytes"] = static_cast<double>(cluster->object_bytes());
  state.counters["cpu_us_per_object"] = cpu_seconds / (objects * state.iterations()) * 1e6;
  // The synced store (objects and indexes) is what stays in the heap after the sync.
  state.counters["heap_bytes_per_object"] = static_cast<double>(max_heap_delta) / objects;
  state.counters["rss_delta_MiB"] = static_cast<double>(max_rss_delta) / (1 << 20);
}

// Args: objects, writer (0: merge PATCH from a second client; 1: straight into the server's store).
void BM_WatchFanIn(benchmark::State& state) {
  Cluster* cluster = GetCluster(state);
  if (cluster == nullptr) return;
  const bool through_http = state.range(1) == 0;
  const int objects = cluster->objects();
  double write_seconds = 0;
  double cpu_seconds = 0;
  // Process-wide, so that no update rewrites the value already stored: the server drops a write
  // that changes nothing, and no event would come.
  static int round = 0;
  for (auto _ : state) {
    const std::string value = std::to_string(++round);
    cluster->ExpectUpdates(objects);
    const double cpu_before = ProcessCpuSeconds();
    const auto start = SteadyClock::now();
    for (int i = 0; i < objects; ++i) {
      const std::string ns = NamespaceName(i);
      const std::string name = "trainer-" + std::to_string(i);
      absl::Status status;
      if (through_http) {
        const nlohmann::json patch = {
            {"metadata", {{"annotations", {{"wavepool.dev/round", value}}}}}};
        status = cluster->writer().Patch(kPods, ns, name, PatchType::kMerge, patch).status();
      } else {
        status =
            cluster->server()
                .store()
                .Modify(cluster->pods(), ns, name, "",
                        [&value](const nlohmann::json& current) -> absl::StatusOr<nlohmann::json> {
                          nlohmann::json next = current;
                          next["metadata"]["annotations"]["wavepool.dev/round"] = value;
                          return next;
                        },
                        {})
                .status();
      }
      if (!status.ok()) {
        state.SkipWithError(("update failed: " + status.ToString()).c_str());
        return;
      }
    }
    write_seconds += SecondsSince(start);
    const bool all_seen = cluster->WaitForUpdates();
    state.SetIterationTime(SecondsSince(start));
    cpu_seconds += ProcessCpuSeconds() - cpu_before;
    if (!all_seen) {
      state.SkipWithError("the informer did not see every update");
      return;
    }
  }
  const double writes = static_cast<double>(state.iterations()) * objects;
  state.SetItemsProcessed(state.iterations() * objects);
  state.counters["write_us"] = write_seconds / writes * 1e6;  // per update, as the writer saw it
  state.counters["cpu_us_per_update"] = cpu_seconds / writes * 1e6;
}

std::vector<std::string> QueueKeys(int count) {
  std::vector<std::string> keys;
  keys.reserve(count);
  for (int i = 0; i < count; ++i)
    keys.push_back(NamespaceName(i) + "/trainer-" + std::to_string(i));
  return keys;
}

// Runs `workers` threads that Get and Done until the queue shuts down, calls `produce` and drains
// the queue; returns the seconds from the first Add to the drained queue, and adds up the handler
// calls and the process CPU seconds over that span. The workers start before the clock does.
double RunQueue(int workers, const std::function<void(WorkQueue&)>& produce,
                std::int64_t* handler_calls, double* cpu_seconds) {
  WorkQueue queue;
  std::atomic<std::int64_t> calls{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&queue, &calls] {
      while (std::optional<std::string> key = queue.Get()) {
        benchmark::DoNotOptimize(key->data());
        calls.fetch_add(1, std::memory_order_relaxed);
        queue.Done(*key);
      }
    });
  }
  const double cpu_before = ProcessCpuSeconds();
  const auto start = SteadyClock::now();
  produce(queue);
  queue.ShutDownWithDrain();
  const double seconds = SecondsSince(start);
  *cpu_seconds += ProcessCpuSeconds() - cpu_before;
  for (auto& thread : threads) thread.join();
  *handler_calls += calls.load();
  return seconds;
}

// Args: keys, workers.
void BM_WorkQueue(benchmark::State& state) {
  const std::vector<std::string> keys = QueueKeys(static_cast<int>(state.range(0)));
  std::int64_t calls = 0;
  double cpu_seconds = 0;
  for (auto _ : state) {
    state.SetIterationTime(RunQueue(
        static_cast<int>(state.range(1)),
        [&keys](WorkQueue& queue) {
          for (const auto& key : keys) queue.Add(key);
        },
        &calls, &cpu_seconds));
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.counters["cpu_ns_per_key"] =
      cpu_seconds / static_cast<double>(state.iterations() * state.range(0)) * 1e9;
  state.counters["calls_per_key"] =
      static_cast<double>(calls) / static_cast<double>(state.iterations() * state.range(0));
}

// Args: keys, workers. Every key is added 10 times (10 passes over the keys) while workers run.
void BM_WorkQueueDuplicates(benchmark::State& state) {
  constexpr int kAddsPerKey = 10;
  const std::vector<std::string> keys = QueueKeys(static_cast<int>(state.range(0)));
  std::int64_t calls = 0;
  double cpu_seconds = 0;
  for (auto _ : state) {
    state.SetIterationTime(RunQueue(
        static_cast<int>(state.range(1)),
        [&keys](WorkQueue& queue) {
          for (int pass = 0; pass < kAddsPerKey; ++pass) {
            for (const auto& key : keys) queue.Add(key);
          }
        },
        &calls, &cpu_seconds));
  }
  const double adds = static_cast<double>(state.iterations() * state.range(0) * kAddsPerKey);
  state.SetItemsProcessed(state.iterations() * state.range(0) * kAddsPerKey);  // adds/s
  state.counters["handler_calls"] = static_cast<double>(calls) / state.iterations();
  state.counters["calls_per_add"] = static_cast<double>(calls) / adds;
  state.counters["cpu_ns_per_add"] = cpu_seconds / adds * 1e9;
}

// Args: objects. One namespace's objects (N/20) through the namespace index.
void BM_StoreByNamespace(benchmark::State& state) {
  Cluster* cluster = GetCluster(state);
  if (cluster == nullptr) return;
  std::size_t returned = 0;
  int i = 0;
  for (auto _ : state) {
    auto objects = cluster->store().ByIndex(kNamespaceIndex, NamespaceName(i++));
    returned += objects.ok() ? objects->size() : 0;
    benchmark::DoNotOptimize(objects);
  }
  state.SetItemsProcessed(state.iterations());  // lookups/s
  state.counters["objects_returned"] = static_cast<double>(returned) / state.iterations();
}

// Args: objects. "app=app-<k>" (N/50 objects): List(selector) scans every object.
void BM_StoreListSelector(benchmark::State& state) {
  Cluster* cluster = GetCluster(state);
  if (cluster == nullptr) return;
  std::size_t returned = 0;
  int i = 0;
  for (auto _ : state) {
    auto objects = cluster->store().List("app=app-" + std::to_string(i++ % kApps));
    returned += objects.ok() ? objects->size() : 0;
    benchmark::DoNotOptimize(objects);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["objects_returned"] = static_cast<double>(returned) / state.iterations();
}

// Args: objects. The same objects as BM_StoreListSelector through the label index.
void BM_StoreByLabel(benchmark::State& state) {
  Cluster* cluster = GetCluster(state);
  if (cluster == nullptr) return;
  std::size_t returned = 0;
  int i = 0;
  for (auto _ : state) {
    auto objects = cluster->store().ByLabel("app", "app-" + std::to_string(i++ % kApps));
    returned += objects.size();
    benchmark::DoNotOptimize(objects);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["objects_returned"] = static_cast<double>(returned) / state.iterations();
}

// Args: objects. One object by key (a reconcile's first step).
void BM_StoreGet(benchmark::State& state) {
  Cluster* cluster = GetCluster(state);
  if (cluster == nullptr) return;
  const std::vector<std::string> keys = QueueKeys(cluster->objects());
  std::size_t i = 0;
  for (auto _ : state) {
    auto object = cluster->store().Get(keys[i++ % keys.size()]);
    benchmark::DoNotOptimize(object);
  }
  state.SetItemsProcessed(state.iterations());
}

void RegisterAll(const std::vector<int>& sizes) {
  using benchmark::kMicrosecond;
  using benchmark::kMillisecond;
  for (int n : sizes) {
    benchmark::RegisterBenchmark("BM_InformerSync", BM_InformerSync)
        ->ArgNames({"objects", "page"})
        ->Args({n, 500})
        ->Args({n, 0})
        ->UseManualTime()
        ->Unit(kMillisecond);
  }
  for (int n : sizes) {
    benchmark::RegisterBenchmark("BM_WatchFanIn", BM_WatchFanIn)
        ->ArgNames({"objects", "writer"})
        ->Args({n, 0})
        ->Args({n, 1})
        ->UseManualTime()
        ->Unit(kMillisecond);
  }
  for (int n : sizes) {
    benchmark::RegisterBenchmark("BM_WorkQueue", BM_WorkQueue)
        ->ArgNames({"keys", "workers"})
        ->Args({n, 1})
        ->Args({n, 2})
        ->Args({n, 4})
        ->UseManualTime()
        ->Unit(kMillisecond);
    benchmark::RegisterBenchmark("BM_WorkQueueDuplicates", BM_WorkQueueDuplicates)
        ->ArgNames({"keys", "workers"})
        ->Args({n, 2})
        ->UseManualTime()
        ->Unit(kMillisecond);
  }
  for (int n : sizes) {
    for (auto* bm : {benchmark::RegisterBenchmark("BM_StoreByNamespace", BM_StoreByNamespace),
                     benchmark::RegisterBenchmark("BM_StoreListSelector", BM_StoreListSelector),
                     benchmark::RegisterBenchmark("BM_StoreByLabel", BM_StoreByLabel),
                     benchmark::RegisterBenchmark("BM_StoreGet", BM_StoreGet)}) {
      bm->ArgNames({"objects"})->Arg(n)->Unit(kMicrosecond);
    }
  }
}

// "--kube_bench_objects=100,1000": the sizes to run; removed from argv before Google Benchmark
// reads its own flags.
std::vector<int> TakeSizes(int* argc, char** argv) {
  constexpr char kFlag[] = "--kube_bench_objects=";
  std::vector<int> sizes = {1000, 10000};
  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    if (std::strncmp(argv[i], kFlag, sizeof(kFlag) - 1) != 0) {
      argv[kept++] = argv[i];
      continue;
    }
    sizes.clear();
    for (const char* p = argv[i] + sizeof(kFlag) - 1; *p != '\0';) {
      char* end = nullptr;
      const long size = std::strtol(p, &end, 10);
      if (end == p || size <= 0) {
        std::fprintf(stderr, "%s: expected positive sizes separated by commas, got %s\n", kFlag,
                     argv[i] + sizeof(kFlag) - 1);
        std::exit(2);
      }
      sizes.push_back(static_cast<int>(size));
      p = *end == ',' ? end + 1 : end;
    }
  }
  *argc = kept;
  return sizes;
}

}  // namespace
}  // namespace wavepool::kube

int main(int argc, char** argv) {
  wavepool::kube::RegisterAll(wavepool::kube::TakeSizes(&argc, argv));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  wavepool::kube::Cluster::DestroyAll();
  benchmark::Shutdown();
  return 0;
}
