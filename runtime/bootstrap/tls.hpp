// Transport of the bootstrap store: a non-blocking stream socket, optionally wrapped in TLS
// (OpenSSL), and the process-wide TLS configuration (the seed's set_conf_store_tls;
// docs/CONTRACT.md section 5).
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

namespace tdist {

struct StoreTlsConfig {
  bool enable = false;
  std::string ca_file;        // CA bundle that signs the peer's certificate (client: required)
  std::string cert_file;      // this side's certificate chain, PEM (server: required)
  std::string key_file;       // its private key, PEM
  bool verify_client = true;  // server: require a client certificate signed by ca (mutual TLS)
  bool verify_host = true;    // client: the server certificate must name the store host / IP
};

// Parses "key=value;key=value" (keys: ca, cert, key, verify_client, verify_host; ',' also
// separates). Throws INVALID_PARAM naming the bad key and listing the legal ones.
StoreTlsConfig parse_store_tls_info(bool enable, const std::string &info);
// Process-wide configuration used by every later tdist_init. Set explicitly it wins over the
// environment (TDIST_STORE_TLS=0|1, TDIST_STORE_TLS_INFO=...), which is read only when unset.
void set_store_tls_config(const StoreTlsConfig &cfg);
StoreTlsConfig store_tls_config();
// Whether this build has OpenSSL.
bool tls_available();

class TlsContext;  // an SSL_CTX with its role and configuration
// Throws INVALID_PARAM / NOT_SUPPORTED with the file or OpenSSL reason at fault.
std::shared_ptr<TlsContext> make_tls_server_context(const StoreTlsConfig &cfg, bool have_secret);
std::shared_ptr<TlsContext> make_tls_client_context(const StoreTlsConfig &cfg);

// A connected socket, always non-blocking underneath; TLS when started. Move-only, closes on
// destruction. Writes never raise SIGPIPE (MSG_NOSIGNAL, also under TLS).
class Channel {
 public:
  Channel() = default;
  explicit Channel(int fd) : fd_(fd) {}
  ~Channel() { close(); }
  Channel(Channel &&o) noexcept { *this = std::move(o); }
  Channel &operator=(Channel &&o) noexcept;
  Channel(const Channel &) = delete;
  Channel &operator=(const Channel &) = delete;

  int fd() const { return fd_; }
  bool is_tls() const { return ssl_ != nullptr; }
  // Server side: wrap the accepted socket; the handshake advances in handshake_step().
  void start_tls_server(const std::shared_ptr<TlsContext> &ctx);
  // 1: handshake done; 0: call again when readable (or writable if want_write()); -1: failed.
  int handshake_step(std::string *why);
  bool handshaking() const { return handshaking_; }
  bool want_write() const { return want_write_; }
  // Client side: complete the handshake within timeout_s; verifies the server's certificate
  // (and its name against `host` when the config says so). Throws BOOTSTRAP naming the reason.
  void connect_tls(const std::shared_ptr<TlsContext> &ctx, const std::string &host, double timeout_s);
  // >0: bytes read; 0: peer closed; -1: nothing available now; -2: error.
  ssize_t read_some(void *p, size_t n);
  // Sends everything within timeout_ms; false on error or timeout.
  bool write_all(const void *p, size_t n, int timeout_ms);
  // Decrypted bytes held inside the TLS layer (poll() cannot see them).
  bool buffered() const;
  // Why the last read_some / write_all failed (OpenSSL's reason under TLS, else errno's).
  const std::string &last_error() const { return err_; }
  void close();

 private:
  int fd_ = -1;
  void *ssl_ = nullptr;  // SSL*
  bool handshaking_ = false, want_write_ = false;
  std::shared_ptr<TlsContext> ctx_;
  std::string err_;
};

}  // namespace tdist
