#include "sim/worker_pool.hpp"

#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "common/error.hpp"

namespace tessera::sim {

namespace {

// A message on a worker's socket: its length (8 bytes, host order: both ends are this program) and its bytes.
std::string framed(const std::string& bytes) {
  const auto size = static_cast<uint64_t>(bytes.size());
  std::string out(reinterpret_cast<const char*>(&size), sizeof size);
  out += bytes;
  return out;
}

// The length a framed message announces, once its first 8 bytes are in.
std::optional<uint64_t> announced_size(const std::string& received) {
  if (received.size() < sizeof(uint64_t)) return std::nullopt;
  uint64_t size = 0;
  std::memcpy(&size, received.data(), sizeof size);
  return size;
}

bool send_all(int socket, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    // MSG_NOSIGNAL: a worker that died makes this fail with EPIPE rather than kill the sender with SIGPIPE.
    const ssize_t sent = ::send(socket, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return false;
    done += static_cast<size_t>(sent);
  }
  return true;
}

// Reads exactly `size` bytes; false at the end of the stream or on an error.
bool receive_exactly(int socket, size_t size, std::string& into) {
  into.resize(size);
  size_t done = 0;
  while (done < size) {
    const ssize_t got = ::recv(socket, into.data() + done, size - done, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    done += static_cast<size_t>(got);
  }
  return true;
}

}  // namespace

WorkerPool::WorkerPool(int workers, Serve serve, std::string failed_reply)
    : serve_(std::move(serve)),
      failed_reply_(std::move(failed_reply)),
      workers_(static_cast<size_t>(workers)),
      parent_(::getpid()) {}

WorkerPool::~WorkerPool() {
  for (Worker& worker : workers_) stop(worker);
}

bool WorkerPool::start(Worker& worker) {
  int sockets[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0) return false;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(sockets[0]);
    serve_forever(sockets[1]);
  }
  ::close(sockets[1]);
  if (pid < 0) {
    ::close(sockets[0]);
    return false;
  }
  worker.pid = pid;
  worker.socket = sockets[0];
  worker.received.clear();
  ++started_;
  return true;
}

void WorkerPool::serve_forever(int socket) {
  // Die with the parent, even if it died before the line above took effect.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent_) ::_exit(0);
  // The other workers' sockets came with the fork: closing them lets those workers see their parent's close.
  for (const Worker& other : workers_)
    if (other.socket >= 0) ::close(other.socket);
  // A worker reads and runs programs of the same few sizes over and over: keep freed memory for the next one
  // rather than handing it back to the kernel and faulting it in again (the program's instruction vectors
  // and the request alone are tens of MB on a 4096^3 GEMM).
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 1 << 30);
  std::string header, request;
  for (;;) {
    if (!receive_exactly(socket, sizeof(uint64_t), header)) ::_exit(0);  // the pool closed: done
    const uint64_t size = *announced_size(header);
    if (!receive_exactly(socket, static_cast<size_t>(size), request)) ::_exit(0);
    std::optional<std::string> reply;
    try {
      reply = serve_(request);
    } catch (...) {
      reply = std::nullopt;
    }
    if (!send_all(socket, framed(reply ? *reply : failed_reply_)) || !reply) ::_exit(0);
  }
}

void WorkerPool::stop(Worker& worker) {
  if (worker.socket >= 0) ::close(worker.socket);
  if (worker.pid > 0) {
    // An idle worker exits at the close; a busy one would finish its program first: nothing it holds is worth
    // waiting for.
    ::kill(worker.pid, SIGKILL);
    int status = 0;
    while (::waitpid(worker.pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  worker.pid = -1;
  worker.socket = -1;
  worker.busy = false;
  worker.received.clear();
}

bool WorkerPool::send(int index, const std::string& request) {
  Worker& worker = workers_[static_cast<size_t>(index)];
  TESSERA_ASSERT(!worker.busy, "a request goes to an idle worker");
  const std::string message = framed(request);
  bool sent = false;
  // A worker that died while idle (killed, or out of memory) is seen here: replaced once.
  for (int attempt = 0; attempt < 2 && !sent; ++attempt) {
    if (worker.pid < 0 && !start(worker)) return false;
    sent = send_all(worker.socket, message);
    if (!sent) stop(worker);
  }
  if (!sent) return false;
  worker.busy = true;
  worker.received.clear();
  return true;
}

std::vector<WorkerPool::Reply> WorkerPool::wait_replies(bool block) {
  std::vector<Reply> replies;
  for (bool first = true; replies.empty() && (block || first); first = false) {
    std::vector<pollfd> polled;
    std::vector<size_t> which;
    for (size_t w = 0; w < workers_.size(); ++w) {
      if (!workers_[w].busy) continue;
      polled.push_back(pollfd{workers_[w].socket, POLLIN, 0});
      which.push_back(w);
    }
    TESSERA_ASSERT(!block || !polled.empty(), "replies are awaited from busy workers only");
    if (polled.empty()) break;
    if (::poll(polled.data(), polled.size(), block ? -1 : 0) < 0) {
      TESSERA_ASSERT(errno == EINTR, "poll on the workers' sockets works");
      continue;
    }
    for (size_t p = 0; p < polled.size(); ++p) {
      if (polled[p].revents == 0) continue;
      Worker& worker = workers_[which[p]];
      char buffer[1 << 16];
      const ssize_t got = ::recv(worker.socket, buffer, sizeof buffer, MSG_DONTWAIT);
      if (got < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
      if (got <= 0) {  // it died mid-request (a crash, a kill): replaced when next needed
        stop(worker);
        replies.push_back(Reply{static_cast<int>(which[p]), std::nullopt});
        continue;
      }
      worker.received.append(buffer, static_cast<size_t>(got));
      const std::optional<uint64_t> size = announced_size(worker.received);
      if (!size || worker.received.size() < sizeof(uint64_t) + *size) continue;
      TESSERA_ASSERT(worker.received.size() == sizeof(uint64_t) + *size,
                     "a worker sends one reply per request");
      std::string bytes = worker.received.substr(sizeof(uint64_t));
      worker.busy = false;
      worker.received.clear();
      if (bytes == failed_reply_) stop(worker);  // it exits after a failure: reap it now
      replies.push_back(Reply{static_cast<int>(which[p]), std::move(bytes)});
    }
  }
  return replies;
}

}  // namespace tessera::sim
