#include "sim/worker_pool.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
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

// A request: its bytes in the memory file `file` (from its start; what lies past them is left from an earlier
// request), whose descriptor is sent with the request's length (8 bytes, host order) as the message. The
// socket never holds more than a few such messages, so sending does not wait for the worker to read. False
// when the file could not be filled or the socket is broken.
bool send_request(int socket, int file, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t wrote = ::pwrite(file, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return false;
    done += static_cast<size_t>(wrote);
  }
  uint64_t size = bytes.size();
  iovec data{&size, sizeof size};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  cmsghdr* rights = CMSG_FIRSTHDR(&message);
  rights->cmsg_level = SOL_SOCKET;
  rights->cmsg_type = SCM_RIGHTS;
  rights->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(rights), &file, sizeof file);
  for (;;) {
    // MSG_NOSIGNAL: a worker that died makes this fail with EPIPE rather than kill the sender with SIGPIPE.
    const ssize_t sent = ::sendmsg(socket, &message, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    return sent == static_cast<ssize_t>(sizeof size);  // 8 bytes of a stream socket go in one piece
  }
}

// Receives the next request into `into`; false at the end of the stream (the pool closed) or on an error.
bool receive_request(int socket, std::string& into) {
  uint64_t size = 0;
  size_t got_bytes = 0;
  int file = -1;
  while (got_bytes < sizeof size) {
    iovec data{reinterpret_cast<char*>(&size) + got_bytes, sizeof size - got_bytes};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr message{};
    message.msg_iov = &data;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    const ssize_t got = ::recvmsg(socket, &message, MSG_CMSG_CLOEXEC);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    got_bytes += static_cast<size_t>(got);
    for (cmsghdr* part = CMSG_FIRSTHDR(&message); part; part = CMSG_NXTHDR(&message, part))
      if (part->cmsg_level == SOL_SOCKET && part->cmsg_type == SCM_RIGHTS)
        std::memcpy(&file, CMSG_DATA(part), sizeof file);
  }
  if (file < 0) return false;
  into.resize(static_cast<size_t>(size));
  size_t done = 0;
  while (done < into.size()) {
    const ssize_t got = ::pread(file, into.data() + done, into.size() - done, static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    done += static_cast<size_t>(got);
  }
  ::close(file);
  return done == into.size();
}

}  // namespace

WorkerPool::WorkerPool(int workers, Serve serve, std::string failed_reply)
    : serve_(std::move(serve)),
      failed_reply_(std::move(failed_reply)),
      workers_(static_cast<size_t>(workers)),
      parent_(::getpid()) {}

WorkerPool::~WorkerPool() {
  for (Worker& worker : workers_) stop(worker);
  for (int file : free_files_) ::close(file);
}

void WorkerPool::start_all() {
  for (Worker& worker : workers_)
    if (worker.pid < 0) start(worker);
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
  // The parent's request files came too: a worker reads only the ones it is sent.
  for (const Worker& other : workers_) {
    if (other.socket >= 0) ::close(other.socket);
    for (int file : other.files) ::close(file);
  }
  for (int file : free_files_) ::close(file);
  // A worker keeps freed memory for its next program as the parent does: the mallopt settings run_timing
  // makes before forking the workers come with the fork.
  std::string request;
  for (;;) {
    if (!receive_request(socket, request)) ::_exit(0);  // the pool closed: done
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
  worker.in_flight = 0;
  worker.received.clear();
  free_files_.insert(free_files_.end(), worker.files.begin(), worker.files.end());
  worker.files.clear();
}

void WorkerPool::lose(size_t index, std::vector<Reply>& replies) {
  Worker& worker = workers_[index];
  for (int i = 0; i < worker.in_flight; ++i) replies.push_back(Reply{static_cast<int>(index), std::nullopt});
  stop(worker);
}

bool WorkerPool::send(int index, const std::string& request) {
  Worker& worker = workers_[static_cast<size_t>(index)];
  // The request's memory file: one a worker has answered, whose pages are reused (faulting in fresh pages
  // for tens of MB per request cost more than writing them), or a new one.
  if (free_files_.empty()) {
    const int file = ::memfd_create("tessera-request", MFD_CLOEXEC);
    if (file < 0) return false;
    free_files_.push_back(file);
  }
  const int file = free_files_.back();
  // A worker that died while idle (killed, or out of memory) is seen here: replaced once. One that died with
  // requests in flight is seen by wait_replies, which answers them.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (worker.pid < 0 && !start(worker)) return false;
    if (send_request(worker.socket, file, request)) {
      free_files_.pop_back();
      worker.files.push_back(file);
      ++worker.in_flight;
      return true;
    }
    if (worker.in_flight > 0) return false;
    stop(worker);
  }
  return false;
}

std::vector<WorkerPool::Reply> WorkerPool::wait_replies(bool block) {
  std::vector<Reply> replies;
  for (bool first = true; replies.empty() && (block || first); first = false) {
    std::vector<pollfd> polled;
    std::vector<size_t> which;
    for (size_t w = 0; w < workers_.size(); ++w) {
      if (workers_[w].in_flight == 0) continue;
      polled.push_back(pollfd{workers_[w].socket, POLLIN, 0});
      which.push_back(w);
    }
    TESSERA_ASSERT(!block || !polled.empty(), "replies are awaited from workers with requests in flight");
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
        lose(which[p], replies);
        continue;
      }
      worker.received.append(buffer, static_cast<size_t>(got));
      // Every whole reply in, in order.
      size_t at = 0;
      for (;;) {
        const std::optional<uint64_t> size = announced_size(worker.received.substr(at, sizeof(uint64_t)));
        if (!size || worker.received.size() - at - sizeof(uint64_t) < *size) break;
        TESSERA_ASSERT(worker.in_flight > 0, "a worker sends one reply per request");
        std::string bytes = worker.received.substr(at + sizeof(uint64_t), static_cast<size_t>(*size));
        at += sizeof(uint64_t) + static_cast<size_t>(*size);
        --worker.in_flight;
        free_files_.push_back(worker.files.front());  // read by now: the next request may reuse it
        worker.files.pop_front();
        const bool failed = bytes == failed_reply_;
        replies.push_back(Reply{static_cast<int>(which[p]), std::move(bytes)});
        if (failed) {  // it exits after a failure: what it had not answered is lost; reap it now
          lose(which[p], replies);
          break;
        }
      }
      if (worker.socket >= 0) worker.received.erase(0, at);
    }
  }
  return replies;
}

}  // namespace tessera::sim
