#include "bootstrap/tls.hpp"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>

#include "core/error.hpp"
#include "tdist/macros.h"

#ifdef TDIST_HAVE_OPENSSL
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#endif

namespace tdist {

// ---------------------------------------------------------------- configuration

StoreTlsConfig parse_store_tls_info(bool enable, const std::string &info) {
  StoreTlsConfig c;
  c.enable = enable;
  size_t i = 0;
  while (i < info.size()) {
    size_t end = info.find_first_of(";,", i);
    if (end == std::string::npos) end = info.size();
    std::string item = info.substr(i, end - i);
    i = end + 1;
    while (!item.empty() && item.front() == ' ') item.erase(0, 1);
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (item.empty()) continue;
    size_t eq = item.find('=');
    TDIST_CHECK(eq != std::string::npos && eq > 0, TDIST_ERR_INVALID_PARAM,
                "store TLS info: '%s' is not key=value (keys: ca, cert, key, verify_client, "
                "verify_host)",
                item.c_str());
    std::string k = item.substr(0, eq), v = item.substr(eq + 1);
    auto flag = [&](const char *name) {
      TDIST_CHECK(v == "0" || v == "1", TDIST_ERR_INVALID_PARAM,
                  "store TLS info: %s must be 0 or 1 (got '%s')", name, v.c_str());
      return v == "1";
    };
    if (k == "ca")
      c.ca_file = v;
    else if (k == "cert")
      c.cert_file = v;
    else if (k == "key")
      c.key_file = v;
    else if (k == "verify_client")
      c.verify_client = flag("verify_client");
    else if (k == "verify_host")
      c.verify_host = flag("verify_host");
    else
      TDIST_THROW(TDIST_ERR_INVALID_PARAM,
                  "store TLS info: unknown key '%s' (keys: ca, cert, key, verify_client, "
                  "verify_host)",
                  k.c_str());
  }
  if (!enable) return StoreTlsConfig{};
  return c;
}

namespace {
std::mutex g_tls_mu;
std::optional<StoreTlsConfig> g_tls_cfg;
}  // namespace

void set_store_tls_config(const StoreTlsConfig &cfg) {
  std::lock_guard<std::mutex> g(g_tls_mu);
  g_tls_cfg = cfg;
}

StoreTlsConfig store_tls_config() {
  {
    std::lock_guard<std::mutex> g(g_tls_mu);
    if (g_tls_cfg) return *g_tls_cfg;
  }
  const char *on = std::getenv("TDIST_STORE_TLS");
  const char *info = std::getenv("TDIST_STORE_TLS_INFO");
  if (!on || !*on || std::strcmp(on, "0") == 0) {
    TDIST_CHECK(!info || !*info, TDIST_ERR_INVALID_PARAM,
                "TDIST_STORE_TLS_INFO is set but TDIST_STORE_TLS is not 1: set TDIST_STORE_TLS=1 "
                "to use TLS, or unset TDIST_STORE_TLS_INFO");
    return StoreTlsConfig{};
  }
  TDIST_CHECK(std::strcmp(on, "1") == 0, TDIST_ERR_INVALID_PARAM, "TDIST_STORE_TLS='%s': must be 0 or 1", on);
  return parse_store_tls_info(true, info ? info : "");
}

#ifdef TDIST_HAVE_OPENSSL

bool tls_available() { return true; }

namespace {

std::string ssl_errors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "no OpenSSL error queued" : out;
}

// A socket BIO that never raises SIGPIPE (OpenSSL's own uses write()): send with MSG_NOSIGNAL.
int bio_write(BIO *b, const char *p, int n) {
  BIO_clear_retry_flags(b);
  int fd = int(reinterpret_cast<intptr_t>(BIO_get_data(b)));
  ssize_t k = ::send(fd, p, size_t(n), MSG_NOSIGNAL);
  if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_write(b);
  return int(k);
}
int bio_read(BIO *b, char *p, int n) {
  BIO_clear_retry_flags(b);
  int fd = int(reinterpret_cast<intptr_t>(BIO_get_data(b)));
  ssize_t k = ::recv(fd, p, size_t(n), 0);
  if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_read(b);
  return int(k);
}
long bio_ctrl(BIO *, int cmd, long, void *) { return cmd == BIO_CTRL_FLUSH ? 1 : 0; }
int bio_create(BIO *b) {
  BIO_set_init(b, 1);
  return 1;
}

BIO_METHOD *nosigpipe_method() {
  static BIO_METHOD *m = [] {
    BIO_METHOD *mm = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "tdist-socket");
    BIO_meth_set_write(mm, bio_write);
    BIO_meth_set_read(mm, bio_read);
    BIO_meth_set_ctrl(mm, bio_ctrl);
    BIO_meth_set_create(mm, bio_create);
    return mm;
  }();
  return m;
}

void check_readable(const std::string &path, const char *what) {
  TDIST_CHECK(!path.empty(), TDIST_ERR_INVALID_PARAM,
              "store TLS: %s is required (set %s=<path> in the TLS info)", what,
              std::strcmp(what, "CA file") == 0       ? "ca"
              : std::strcmp(what, "certificate") == 0 ? "cert"
                                                      : "key");
  TDIST_CHECK(::access(path.c_str(), R_OK) == 0, TDIST_ERR_INVALID_PARAM,
              "store TLS: cannot read the %s '%s': %s", what, path.c_str(), std::strerror(errno));
}

}  // namespace

class TlsContext {
 public:
  SSL_CTX *ctx = nullptr;
  StoreTlsConfig cfg;
  ~TlsContext() {
    if (ctx) SSL_CTX_free(ctx);
  }
};

namespace {
std::shared_ptr<TlsContext> make_context(const StoreTlsConfig &cfg, bool server) {
  auto t = std::make_shared<TlsContext>();
  t->cfg = cfg;
  t->ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
  TDIST_CHECK(t->ctx, TDIST_ERR_INNER, "SSL_CTX_new: %s", ssl_errors().c_str());
  SSL_CTX_set_min_proto_version(t->ctx, TLS1_3_VERSION);
  SSL_CTX_set_mode(t->ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  return t;
}

void load_own_cert(TlsContext &t) {
  if (SSL_CTX_use_certificate_chain_file(t.ctx, t.cfg.cert_file.c_str()) != 1)
    TDIST_THROW(TDIST_ERR_INVALID_PARAM, "store TLS: cannot load certificate '%s': %s",
                t.cfg.cert_file.c_str(), ssl_errors().c_str());
  if (SSL_CTX_use_PrivateKey_file(t.ctx, t.cfg.key_file.c_str(), SSL_FILETYPE_PEM) != 1)
    TDIST_THROW(TDIST_ERR_INVALID_PARAM, "store TLS: cannot load private key '%s': %s",
                t.cfg.key_file.c_str(), ssl_errors().c_str());
  if (SSL_CTX_check_private_key(t.ctx) != 1)
    TDIST_THROW(TDIST_ERR_INVALID_PARAM, "store TLS: key '%s' does not match certificate '%s'",
                t.cfg.key_file.c_str(), t.cfg.cert_file.c_str());
}

void load_ca(TlsContext &t) {
  if (SSL_CTX_load_verify_locations(t.ctx, t.cfg.ca_file.c_str(), nullptr) != 1)
    TDIST_THROW(TDIST_ERR_INVALID_PARAM, "store TLS: cannot load CA file '%s': %s", t.cfg.ca_file.c_str(),
                ssl_errors().c_str());
}
}  // namespace

std::shared_ptr<TlsContext> make_tls_server_context(const StoreTlsConfig &cfg, bool have_secret) {
  check_readable(cfg.cert_file, "certificate");
  check_readable(cfg.key_file, "private key");
  TDIST_CHECK(cfg.verify_client || have_secret, TDIST_ERR_INVALID_PARAM,
              "store TLS with verify_client=0 needs a shared secret (TDIST_STORE_SECRET) to "
              "authenticate ranks; set one, or keep verify_client=1 (mutual TLS)");
  if (cfg.verify_client) check_readable(cfg.ca_file, "CA file");
  auto t = make_context(cfg, true);
  load_own_cert(*t);
  if (cfg.verify_client) {
    load_ca(*t);
    SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  return t;
}

std::shared_ptr<TlsContext> make_tls_client_context(const StoreTlsConfig &cfg) {
  check_readable(cfg.ca_file, "CA file");
  auto t = make_context(cfg, false);
  load_ca(*t);
  SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, nullptr);
  // A client certificate is presented when configured (the server may require it).
  if (!cfg.cert_file.empty() || !cfg.key_file.empty()) {
    check_readable(cfg.cert_file, "certificate");
    check_readable(cfg.key_file, "private key");
    load_own_cert(*t);
  }
  return t;
}

Channel &Channel::operator=(Channel &&o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.fd_;
    ssl_ = o.ssl_;
    handshaking_ = o.handshaking_;
    want_write_ = o.want_write_;
    ctx_ = std::move(o.ctx_);
    o.fd_ = -1;
    o.ssl_ = nullptr;
  }
  return *this;
}

void Channel::close() {
  if (ssl_) SSL_free(static_cast<SSL *>(ssl_));  // no close_notify: the peer sees EOF either way
  ssl_ = nullptr;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

namespace {
SSL *new_ssl(TlsContext &t, int fd) {
  SSL *s = SSL_new(t.ctx);
  TDIST_CHECK(s, TDIST_ERR_INNER, "SSL_new: %s", ssl_errors().c_str());
  BIO *b = BIO_new(nosigpipe_method());
  if (!b) {
    SSL_free(s);
    TDIST_THROW(TDIST_ERR_INNER, "BIO_new: %s", ssl_errors().c_str());
  }
  BIO_set_data(b, reinterpret_cast<void *>(intptr_t(fd)));
  SSL_set_bio(s, b, b);
  return s;
}

std::string handshake_error(SSL *s, int rc) {
  int e = SSL_get_error(s, rc);
  long v = SSL_get_verify_result(s);
  std::string why;
  if (v != X509_V_OK)
    why = strfmt("certificate verification failed: %s", X509_verify_cert_error_string(v));
  else if (e == SSL_ERROR_SYSCALL)
    why = errno ? std::strerror(errno) : "peer closed the connection";
  else if (e == SSL_ERROR_ZERO_RETURN)
    why = "peer closed the connection";
  else
    why = ssl_errors();
  ERR_clear_error();
  return why;
}
}  // namespace

void Channel::start_tls_server(const std::shared_ptr<TlsContext> &ctx) {
  ctx_ = ctx;
  ssl_ = new_ssl(*ctx, fd_);
  SSL_set_accept_state(static_cast<SSL *>(ssl_));
  handshaking_ = true;
}

int Channel::handshake_step(std::string *why) {
  SSL *s = static_cast<SSL *>(ssl_);
  ERR_clear_error();
  int rc = SSL_do_handshake(s);
  want_write_ = false;
  if (rc == 1) {
    handshaking_ = false;
    return 1;
  }
  int e = SSL_get_error(s, rc);
  if (e == SSL_ERROR_WANT_READ) return 0;
  if (e == SSL_ERROR_WANT_WRITE) {
    want_write_ = true;
    return 0;
  }
  *why = handshake_error(s, rc);
  return -1;
}

void Channel::connect_tls(const std::shared_ptr<TlsContext> &ctx, const std::string &host, double timeout_s) {
  ctx_ = ctx;
  SSL *s = new_ssl(*ctx, fd_);
  ssl_ = s;
  if (ctx->cfg.verify_host) {
    X509_VERIFY_PARAM *p = SSL_get0_param(s);
    in6_addr tmp;
    bool is_ip = inet_pton(AF_INET, host.c_str(), &tmp) == 1 || inet_pton(AF_INET6, host.c_str(), &tmp) == 1;
    int ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(p, host.c_str())
                   : X509_VERIFY_PARAM_set1_host(p, host.c_str(), 0);
    TDIST_CHECK(ok == 1, TDIST_ERR_INVALID_PARAM, "store TLS: cannot check the name '%s'", host.c_str());
    if (!is_ip) SSL_set_tlsext_host_name(s, host.c_str());
  }
  SSL_set_connect_state(s);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    ERR_clear_error();
    int rc = SSL_do_handshake(s);
    if (rc == 1) return;
    int e = SSL_get_error(s, rc);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
      TDIST_THROW(TDIST_ERR_BOOTSTRAP, "store TLS handshake with %s failed: %s", host.c_str(),
                  handshake_error(s, rc).c_str());
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
            .count();
    TDIST_CHECK(left > 0, TDIST_ERR_BOOTSTRAP, "store TLS handshake with %s timed out after %.0f s",
                host.c_str(), timeout_s);
    pollfd pf{fd_, short(e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT), 0};
    ::poll(&pf, 1, int(std::min<long long>(left, 1000)));
  }
}

ssize_t Channel::read_some(void *p, size_t n) {
  if (!ssl_) {
    ssize_t k = ::recv(fd_, p, n, MSG_DONTWAIT);
    if (k >= 0) return k;
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return -1;
    err_ = std::strerror(errno);
    return -2;
  }
  SSL *s = static_cast<SSL *>(ssl_);
  ERR_clear_error();
  int k = SSL_read(s, p, int(std::min<size_t>(n, 1 << 30)));
  if (k > 0) return k;
  int e = SSL_get_error(s, k);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return -1;
  if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && errno == 0)) return 0;
  err_ = e == SSL_ERROR_SYSCALL ? std::string(std::strerror(errno)) : "TLS: " + ssl_errors();
  return -2;
}

bool Channel::write_all(const void *p, size_t n, int timeout_ms) {
  if (fd_ < 0) return false;
  const char *c = static_cast<const char *>(p);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (n) {
    short wait_for = POLLOUT;
    if (!ssl_) {
      ssize_t k = ::send(fd_, c, n, MSG_NOSIGNAL);
      if (k > 0) {
        c += k;
        n -= size_t(k);
        continue;
      }
      if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        err_ = std::strerror(errno);
        return false;
      }
    } else {
      SSL *s = static_cast<SSL *>(ssl_);
      ERR_clear_error();
      int k = SSL_write(s, c, int(std::min<size_t>(n, 1 << 30)));
      if (k > 0) {
        c += k;
        n -= size_t(k);
        continue;
      }
      int e = SSL_get_error(s, k);
      if (e == SSL_ERROR_WANT_READ)
        wait_for = POLLIN;
      else if (e != SSL_ERROR_WANT_WRITE) {
        err_ = e == SSL_ERROR_SYSCALL ? std::string(std::strerror(errno)) : "TLS: " + ssl_errors();
        return false;
      }
    }
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
            .count();
    if (left <= 0) {
      err_ = "send timed out";
      return false;
    }
    pollfd pf{fd_, wait_for, 0};
    ::poll(&pf, 1, int(std::min<long long>(left, 1000)));
  }
  return true;
}

bool Channel::buffered() const { return ssl_ && SSL_pending(static_cast<SSL *>(ssl_)) > 0; }

#else  // no OpenSSL in this build: plain TCP only

bool tls_available() { return false; }
class TlsContext {};
std::shared_ptr<TlsContext> make_tls_server_context(const StoreTlsConfig &, bool) {
  TDIST_THROW(TDIST_ERR_NOT_SUPPORTED,
              "store TLS requested, but this tdist was built without OpenSSL (install libssl-dev "
              "and rebuild, or set_conf_store_tls(False, \"\"))");
}
std::shared_ptr<TlsContext> make_tls_client_context(const StoreTlsConfig &c) {
  return make_tls_server_context(c, true);
}
Channel &Channel::operator=(Channel &&o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}
void Channel::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}
void Channel::start_tls_server(const std::shared_ptr<TlsContext> &) {}
int Channel::handshake_step(std::string *why) {
  *why = "no TLS in this build";
  return -1;
}
void Channel::connect_tls(const std::shared_ptr<TlsContext> &c, const std::string &, double) {
  make_tls_client_context(StoreTlsConfig{});
  (void)c;
}
ssize_t Channel::read_some(void *p, size_t n) {
  ssize_t k = ::recv(fd_, p, n, MSG_DONTWAIT);
  if (k >= 0) return k;
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return -1;
  err_ = std::strerror(errno);
  return -2;
}
bool Channel::write_all(const void *p, size_t n, int timeout_ms) {
  const char *c = static_cast<const char *>(p);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (n) {
    ssize_t k = ::send(fd_, c, n, MSG_NOSIGNAL);
    if (k > 0) {
      c += k;
      n -= size_t(k);
      continue;
    }
    if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
            .count();
    if (left <= 0) return false;
    pollfd pf{fd_, POLLOUT, 0};
    ::poll(&pf, 1, int(std::min<long long>(left, 1000)));
  }
  return true;
}
bool Channel::buffered() const { return false; }

#endif

}  // namespace tdist

extern "C" {

// The seed's set_conf_store_tls (aclshmem: TLS configuration before init). enable=0 turns TLS
// off (tls_info is ignored); enable=1 turns it on with "ca=...;cert=...;key=...[;verify_client=0|1]
// [;verify_host=0|1]". Applies to every later tdist_init in this process and wins over
// TDIST_STORE_TLS / TDIST_STORE_TLS_INFO. Checks the keys here; files are opened at init.
TDIST_EXPORT int tdist_set_conf_store_tls(int enable, const char *tls_info) {
  return tdist::c_boundary("tdist_set_conf_store_tls", [&] {
    TDIST_CHECK(enable == 0 || enable == 1, TDIST_ERR_INVALID_PARAM, "enable must be 0 or 1 (got %d)",
                enable);
    TDIST_CHECK(!enable || tdist::tls_available(), TDIST_ERR_NOT_SUPPORTED,
                "store TLS requested, but this tdist was built without OpenSSL");
    tdist::StoreTlsConfig c = tdist::parse_store_tls_info(enable != 0, tls_info ? tls_info : "");
    if (enable) {
      TDIST_CHECK(!c.cert_file.empty() || !c.ca_file.empty(), TDIST_ERR_INVALID_PARAM,
                  "set_conf_store_tls(1, ...): tls_info must name at least ca=<file> (clients) "
                  "and cert=<file>;key=<file> (the rank that serves the store)");
    }
    tdist::set_store_tls_config(c);
  });
}

}  // extern "C"
