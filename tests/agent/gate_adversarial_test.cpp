// A hostile background worker against the launch gate's trust boundary (gate_layout.h): it
// registers over the real socket, receives the GPU's control segment and the foreground's
// segment with SCM_RIGHTS, and tries everything it can with those descriptors: writable
// mappings, mprotect, write(2), ftruncate, re-opening them read-write through /proc/self/fd,
// adding seals, writing through its read-only mapping, registering with a foreign or unsealed
// segment, and smuggling descriptors. Every attempt fails; the agent keeps serving and the
// foreground keeps its credits and its pause.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/socket_test_util.h"
#include "tests/support/status_matchers.h"
#include "wavepool/agent/client/agent_client.h"
#include "wavepool/agent/client/gate_layout.h"
#include "wavepool/agent/client/gate_memory.h"
#include "wavepool/agent/client/launch_gate.h"
#include "wavepool/agent/gate_segment.h"
#include "wavepool/agent/socket_server.h"

namespace wavepool::agent {
namespace {

using ::testing::HasSubstr;
using testing::RawClient;
using testing::RecordingHandler;
using testing::WaitUntil;
using ::wavepool::testing::TempDir;

// What one attack on one descriptor achieved: each is true when the attack failed as it must.
struct Defended {
  bool writable_mmap = false;    // mmap(PROT_WRITE, MAP_SHARED): EPERM
  bool mprotect = false;         // a read-only mapping cannot become writable
  bool write = false;            // pwrite: EPERM
  bool shrink = false;           // ftruncate(0): EPERM
  bool grow = false;             // ftruncate(2x): EPERM
  bool reopen_writable = false;  // /proc/self/fd/N opened O_RDWR still maps read-only
  bool add_seals = false;        // F_SEAL_SEAL: no seal can be added (or removed)
  bool write_faults = false;     // a store through the read-only mapping kills the writer
};

// Writes through a read-only mapping in a forked child: true if the store faulted (SIGSEGV)
// rather than landing. The child only stores and exits (no allocation after fork).
bool StoreFaults(void* address) {
  const pid_t child = fork();
  if (child == 0) {
    alarm(10);
    *static_cast<volatile std::uint32_t*>(address) = 0;
    _exit(0);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child) return false;
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
}

Defended Attack(int fd, std::size_t bytes) {
  Defended d;
  void* writable = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  d.writable_mmap = writable == MAP_FAILED && errno == EPERM;
  if (writable != MAP_FAILED) munmap(writable, bytes);
  void* readable = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  if (readable != MAP_FAILED) {
    d.mprotect = mprotect(readable, bytes, PROT_READ | PROT_WRITE) != 0;
    d.write_faults = StoreFaults(readable);
    munmap(readable, bytes);
  }
  const char zero[8] = {};
  d.write = pwrite(fd, zero, sizeof zero, 0) < 0 && errno == EPERM;
  d.shrink = ftruncate(fd, 0) != 0 && errno == EPERM;
  d.grow = ftruncate(fd, static_cast<off_t>(2 * bytes)) != 0 && errno == EPERM;
  const std::string proc = "/proc/self/fd/" + std::to_string(fd);
  const int reopened = open(proc.c_str(), O_RDWR | O_CLOEXEC);
  if (reopened < 0) {
    d.reopen_writable = true;  // not even opened read-write
  } else {
    void* again = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, reopened, 0);
    d.reopen_writable = again == MAP_FAILED && errno == EPERM && ftruncate(reopened, 0) != 0 &&
                        pwrite(reopened, zero, 1, 0) < 0;
    if (again != MAP_FAILED) munmap(again, bytes);
    close(reopened);
  }
  d.add_seals = fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE) != 0 && errno == EPERM;
  return d;
}

void ExpectDefended(const Defended& d, const std::string& what) {
  EXPECT_TRUE(d.writable_mmap) << what;
  EXPECT_TRUE(d.mprotect) << what;
  EXPECT_TRUE(d.write) << what;
  EXPECT_TRUE(d.shrink) << what;
  EXPECT_TRUE(d.grow) << what;
  EXPECT_TRUE(d.reopen_writable) << what;
  EXPECT_TRUE(d.add_seals) << what;
  EXPECT_TRUE(d.write_faults) << what;
}

class GateAdversarialTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(dir_, TempDir::Create("wavepool-sock"));
    handler_.gate_directory = dir_.path();
    SocketServer::Options options;
    options.path = dir_.File("agent.sock");
    options.log = [](std::string_view) {};
    ASSERT_OK_AND_ASSIGN(server_, SocketServer::Start(options, &handler_));
    handler_.server = server_.get();
    ASSERT_OK_AND_ASSIGN(foreground_, AgentClient::Connect(Client(Role::kForeground)));
    foreground_slot_ = foreground_->registration().slot;
    foreground_->gate()->RaisePause();
  }
  void TearDown() override {
    foreground_.reset();
    server_.reset();
  }

  AgentClient::Options Client(Role role) const {
    AgentClient::Options options;
    options.socket_path = dir_.File("agent.sock");
    options.registration = RawClient::TypicalRequest(role);
    options.log = [](std::string_view) {};
    return options;
  }

  // A hostile background registered by hand with a segment of its own; its Registered (with the
  // descriptors that came with it) in `*registered`.
  std::unique_ptr<RawClient> HostileBackground(Registered* registered) {
    auto client = std::make_unique<RawClient>(dir_.File("agent.sock"));
    EXPECT_TRUE(client->connected());
    own_ = LaunchGate::CreateWorkerSegment().value();
    RegisterRequest request = RawClient::TypicalRequest(Role::kBackground);
    request.worker_segment = own_.fd;
    EXPECT_TRUE(client->SendWithDescriptors(request));
    absl::StatusOr<Frame> answer = client->Receive();
    EXPECT_TRUE(answer.ok()) << answer.status();
    if (answer.ok() && std::holds_alternative<Registered>(answer->message)) {
      *registered = std::get<Registered>(std::move(answer->message));
    }
    return client;
  }

  // The foreground kept its slot, its credits and its pause, as the agent sees it and as a
  // well-behaved background sees it.
  void ExpectForegroundIntact() {
    std::lock_guard<std::mutex> lock(handler_.mu);
    const SlotSnapshot slot = handler_.segment->Read(foreground_slot_);
    EXPECT_EQ(slot.state, SlotState::kActive);
    EXPECT_EQ(slot.role, Role::kForeground);
    EXPECT_EQ(slot.credit_limit, handler_.credit_limit);
    EXPECT_TRUE(slot.pause);
    EXPECT_EQ(handler_.segment->ForegroundHold(), 1u);
  }

  TempDir dir_;
  RecordingHandler handler_;
  std::unique_ptr<SocketServer> server_;
  std::unique_ptr<AgentClient> foreground_;
  std::uint32_t foreground_slot_ = 0;
  OwnSegment own_;
};

TEST_F(GateAdversarialTest, AdversarialBackgroundCannotWriteTheGateOrTheForegroundsHold) {
  Registered registered;
  auto hostile = HostileBackground(&registered);
  ASSERT_NE(registered.gate, nullptr);
  ASSERT_TRUE(registered.gate->valid());
  ASSERT_EQ(registered.foregrounds.size(), 1u);
  ASSERT_TRUE(registered.foregrounds[0].segment->valid());
  EXPECT_EQ(registered.foregrounds[0].slot, foreground_slot_);
  // The control segment holds every slot's state, role, pid, credit limit and pause, and the
  // background stop; the foreground's segment holds its hold word.
  ExpectDefended(Attack(registered.gate->get(), sizeof(GateFile)), "control segment");
  ExpectDefended(Attack(registered.foregrounds[0].segment->get(), sizeof(WorkerSegment)),
                 "foreground segment");
  ExpectForegroundIntact();
  // A well-behaved background on the same GPU still obeys the foreground's pause, and is
  // released when (and only when) the foreground lowers it.
  ASSERT_OK_AND_ASSIGN(auto background, AgentClient::Connect(Client(Role::kBackground)));
  EXPECT_TRUE(background->gate()->Paused());
  EXPECT_FALSE(background->gate()->TryAcquire());
  foreground_->gate()->LowerPause();
  EXPECT_TRUE(WaitUntil([&] { return !background->gate()->Paused(); }));
  EXPECT_TRUE(background->gate()->TryAcquire());
  background->gate()->Release();
  // The foreground still takes its credits.
  EXPECT_EQ(foreground_->gate()->credit_limit(), handler_.credit_limit);
  EXPECT_TRUE(foreground_->gate()->TryAcquire());
  foreground_->gate()->Release();
}

TEST_F(GateAdversarialTest, AdversarialBackgroundCannotResizeAnySegmentItHolds) {
  Registered registered;
  auto hostile = HostileBackground(&registered);
  ASSERT_NE(registered.gate, nullptr);
  ASSERT_EQ(registered.foregrounds.size(), 1u);
  // Its own segment too: the agent maps it, so shrinking it would fault the agent's reads.
  for (const auto& [fd, what] : std::vector<std::pair<int, std::string>>{
           {registered.gate->get(), "control segment"},
           {registered.foregrounds[0].segment->get(), "foreground segment"},
           {own_.fd->get(), "own segment"}}) {
    errno = 0;
    EXPECT_NE(ftruncate(fd, 0), 0) << what;
    EXPECT_EQ(errno, EPERM) << what;
    errno = 0;
    EXPECT_NE(ftruncate(fd, 1 << 20), 0) << what;
    EXPECT_EQ(errno, EPERM) << what;
    errno = 0;
    EXPECT_NE(fallocate(fd, 0, 0, 1 << 20), 0) << what;
    EXPECT_EQ(errno, EPERM) << what;
  }
  // The agent reads every slot without a fault, and the foreground is untouched.
  ExpectForegroundIntact();
  std::lock_guard<std::mutex> lock(handler_.mu);
  for (std::uint32_t i = 0; i < kMaxSlotsPerGpu; ++i) (void)handler_.segment->Read(i);
}

TEST_F(GateAdversarialTest, AdversarialRegistrationsWithForeignOrUnsealedSegmentsAreRefused) {
  Registered registered;
  auto hostile = HostileBackground(&registered);
  ASSERT_EQ(registered.foregrounds.size(), 1u);
  const std::size_t before = handler_.registration_count();
  // The foreground's segment as its own (it would then "own" the hold), the gate itself, an
  // unsealed segment (it could resize or hand out writably later), and none at all.
  absl::StatusOr<ScopedFd> unsealed = CreateSealableSegment("unsealed", sizeof(WorkerSegment));
  ASSERT_OK(unsealed.status());
  const std::vector<std::pair<SharedFd, std::string>> attempts = {
      {registered.foregrounds[0].segment, "segment of slot"},
      {registered.gate, "size"},
      {ShareFd(*std::move(unsealed)), "seals"},
      {nullptr, "no descriptor"}};
  for (const auto& [segment, why] : attempts) {
    RawClient client(dir_.File("agent.sock"));
    RegisterRequest request = RawClient::TypicalRequest(Role::kBackground);
    request.worker_segment = segment;
    ASSERT_TRUE(client.SendWithDescriptors(request));
    ASSERT_OK_AND_ASSIGN(Frame answer, client.Receive());
    ASSERT_TRUE(std::holds_alternative<ErrorReply>(answer.message)) << why;
    EXPECT_EQ(std::get<ErrorReply>(answer.message).code, absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::get<ErrorReply>(answer.message).message, HasSubstr(why));
    EXPECT_TRUE(client.ClosedByPeer()) << why;
  }
  EXPECT_EQ(handler_.registration_count(), before + attempts.size());
  ExpectForegroundIntact();
  EXPECT_TRUE(foreground_->connected());
}

TEST_F(GateAdversarialTest, AdversarialDescriptorsOutsideRegisterCloseTheConnection) {
  Registered registered;
  auto hostile = HostileBackground(&registered);
  ASSERT_NE(registered.gate, nullptr);
  // Descriptors smuggled with a report: a protocol error, not a leak in the agent.
  ASSERT_TRUE(hostile->SendWithDescriptors(ReportIteration{1, 0.5, 8}, {registered.gate}));
  ASSERT_OK_AND_ASSIGN(Frame answer, hostile->Receive());
  ASSERT_TRUE(std::holds_alternative<ErrorReply>(answer.message));
  EXPECT_THAT(std::get<ErrorReply>(answer.message).message, HasSubstr("descriptor"));
  EXPECT_TRUE(hostile->ClosedByPeer());
  // A Register stuffed with many descriptors is refused before it is served.
  RawClient stuffer(dir_.File("agent.sock"));
  RegisterRequest request = RawClient::TypicalRequest(Role::kBackground);
  request.worker_segment = LaunchGate::CreateWorkerSegment().value().fd;
  ASSERT_TRUE(stuffer.SendWithDescriptors(request, std::vector<SharedFd>(8, registered.gate)));
  ASSERT_OK_AND_ASSIGN(Frame refused, stuffer.Receive());
  ASSERT_TRUE(std::holds_alternative<ErrorReply>(refused.message));
  EXPECT_TRUE(stuffer.ClosedByPeer());
  // The agent keeps serving, and the foreground keeps its slot and pause.
  ExpectForegroundIntact();
  ASSERT_OK_AND_ASSIGN(auto background, AgentClient::Connect(Client(Role::kBackground)));
  EXPECT_TRUE(background->gate()->Paused());
}

TEST_F(GateAdversarialTest, AdversarialWorkerCountersAreClampedWhenReadBack) {
  // The worker owns its segment and may write anything there; the agent only clamps it.
  Registered registered;
  auto hostile = HostileBackground(&registered);
  auto* mine = static_cast<WorkerSegment*>(own_.mapping->data());
  mine->in_flight.store(-5);
  mine->heartbeat_ns.store(-1);
  mine->wait_ns_total.store(~std::uint64_t{0});
  std::lock_guard<std::mutex> lock(handler_.mu);
  const SlotSnapshot slot = handler_.segment->Read(registered.slot);
  EXPECT_EQ(slot.role, Role::kBackground);  // from the agent's own memory
  EXPECT_EQ(slot.in_flight, 0);
  EXPECT_EQ(slot.heartbeat_ns, 0);
  EXPECT_EQ(slot.wait_ns_total, static_cast<std::uint64_t>(INT64_MAX));
  mine->in_flight.store(INT32_MAX);
  EXPECT_LE(handler_.segment->Read(registered.slot).in_flight, 1 << 20);
}

}  // namespace
}  // namespace wavepool::agent
