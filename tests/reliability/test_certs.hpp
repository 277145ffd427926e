// Throw-away PKI for TLS tests, made with the OpenSSL API (no openssl CLI needed): a CA, a server
// certificate for 127.0.0.1 / localhost, a client certificate, and a second, unrelated CA whose
// certificate the servers do not trust.
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace tdist_test {

struct Pki {
  std::string dir;
  std::string ca, server_cert, server_key, client_cert, client_key;
  std::string rogue_ca, rogue_cert, rogue_key;  // signed by a CA nobody trusts
  std::string wrong_name_cert, wrong_name_key;  // signed by the CA, but for "other.example"
};

namespace detail {

inline EVP_PKEY *new_key() {
  EVP_PKEY *k = EVP_EC_gen("P-256");
  if (!k) throw std::runtime_error("EVP_EC_gen failed");
  return k;
}

inline void add_ext(X509 *cert, X509 *issuer, int nid, const char *value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION *e = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (!e) throw std::runtime_error(std::string("bad extension ") + value);
  X509_add_ext(cert, e, -1);
  X509_EXTENSION_free(e);
}

// Issues a certificate for `key` named `cn`; self-signed when issuer is null.
inline X509 *issue(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *issuer_key, bool ca,
                   const char *san, long serial) {
  X509 *c = X509_new();
  X509_set_version(c, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(c), serial);
  X509_gmtime_adj(X509_getm_notBefore(c), -3600);
  X509_gmtime_adj(X509_getm_notAfter(c), 3600L * 24);
  X509_set_pubkey(c, key);
  X509_NAME *n = X509_get_subject_name(c);
  X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char *>(cn), -1, -1, 0);
  X509_set_issuer_name(c, issuer ? X509_get_subject_name(issuer) : n);
  X509 *iss = issuer ? issuer : c;
  if (ca) {
    add_ext(c, iss, NID_basic_constraints, "critical,CA:TRUE");
    add_ext(c, iss, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    add_ext(c, iss, NID_basic_constraints, "critical,CA:FALSE");
    add_ext(c, iss, NID_ext_key_usage, "serverAuth,clientAuth");
    if (san) add_ext(c, iss, NID_subject_alt_name, san);
  }
  if (!X509_sign(c, issuer_key ? issuer_key : key, EVP_sha256()))
    throw std::runtime_error("X509_sign failed");
  return c;
}

inline void write_cert(const std::string &path, X509 *c) {
  FILE *f = std::fopen(path.c_str(), "w");
  if (!f) throw std::runtime_error("cannot write " + path);
  PEM_write_X509(f, c);
  std::fclose(f);
}

inline void write_key(const std::string &path, EVP_PKEY *k) {
  FILE *f = std::fopen(path.c_str(), "w");
  if (!f) throw std::runtime_error("cannot write " + path);
  PEM_write_PrivateKey(f, k, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(f);
}

}  // namespace detail

inline Pki make_pki(const std::string &dir) {
  using namespace detail;
  Pki p;
  p.dir = dir;
  EVP_PKEY *ca_key = new_key(), *srv_key = new_key(), *cli_key = new_key(), *rca_key = new_key(),
           *rogue_key = new_key(), *wn_key = new_key();
  X509 *ca = issue(ca_key, "tdist test CA", nullptr, nullptr, true, nullptr, 1);
  X509 *srv = issue(srv_key, "tdist store", ca, ca_key, false, "IP:127.0.0.1,DNS:localhost", 2);
  X509 *cli = issue(cli_key, "tdist rank", ca, ca_key, false, "DNS:rank.tdist", 3);
  X509 *rca = issue(rca_key, "rogue CA", nullptr, nullptr, true, nullptr, 4);
  X509 *rogue = issue(rogue_key, "rogue", rca, rca_key, false, "IP:127.0.0.1,DNS:localhost", 5);
  X509 *wn = issue(wn_key, "other", ca, ca_key, false, "DNS:other.example", 6);
  p.ca = dir + "/ca.pem";
  p.server_cert = dir + "/server.pem";
  p.server_key = dir + "/server.key";
  p.client_cert = dir + "/client.pem";
  p.client_key = dir + "/client.key";
  p.rogue_ca = dir + "/rogue-ca.pem";
  p.rogue_cert = dir + "/rogue.pem";
  p.rogue_key = dir + "/rogue.key";
  p.wrong_name_cert = dir + "/wrong-name.pem";
  p.wrong_name_key = dir + "/wrong-name.key";
  write_cert(p.ca, ca);
  write_cert(p.server_cert, srv);
  write_key(p.server_key, srv_key);
  write_cert(p.client_cert, cli);
  write_key(p.client_key, cli_key);
  write_cert(p.rogue_ca, rca);
  write_cert(p.rogue_cert, rogue);
  write_key(p.rogue_key, rogue_key);
  write_cert(p.wrong_name_cert, wn);
  write_key(p.wrong_name_key, wn_key);
  for (X509 *c : {ca, srv, cli, rca, rogue, wn}) X509_free(c);
  for (EVP_PKEY *k : {ca_key, srv_key, cli_key, rca_key, rogue_key, wn_key}) EVP_PKEY_free(k);
  return p;
}

}  // namespace tdist_test
