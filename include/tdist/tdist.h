/*
 * tdist host C API: bootstrap, symmetric heap, teams, host-side synchronisation.
 *
 * Error model (one model from C++ to Python, see docs/CONTRACT.md):
 *   - every function returning int returns TDIST_SUCCESS (0) or a negative tdist_status_t;
 *   - functions returning a pointer return NULL on error;
 *   - in both cases tdist_last_error() / tdist_last_error_message() (thread-local) say what and why;
 *   - inside the runtime, C++ code throws tdist::Error (runtime/core/error.hpp) with the same code
 *     and message, converted to a status at the C boundary;
 *   - Python raises tdist.TdistError subclasses named after the codes.
 * Status values are aclshmem's error codes (plus TDIST_ERR_COLLECTIVE_MISMATCH), all listed in
 * tdist/status.def.
 */
#ifndef TDIST_TDIST_H
#define TDIST_TDIST_H

#include <stddef.h>
#include <stdint.h>

#include "tdist/abi.h"
#include "tdist/device_state.h"
#include "tdist/macros.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tdist_status_t {
/* TDIST_SUCCESS = 0, TDIST_ERR_INVALID_PARAM = -1, ... TDIST_ERR_NOT_SUPPORTED = -100: the values
 * and what each means are in the one status table, tdist/status.def. */
#define TDIST_STATUS(name, value, shmem, pyclass, pybase, description) TDIST_##name = (value),
#include "tdist/status.def"
#undef TDIST_STATUS
} tdist_status_t;

TDIST_EXPORT const char *tdist_status_name(int status);
/** Status of the last failing tdist call on this thread (TDIST_SUCCESS if none). */
TDIST_EXPORT int tdist_last_error(void);
/** Human-readable message of the last failing call on this thread ("" if none). */
TDIST_EXPORT const char *tdist_last_error_message(void);
TDIST_EXPORT void tdist_clear_error(void);

/* ---- initialisation ---- */

#define TDIST_IP_PORT_MAX 128
#define TDIST_PATH_MAX 256
/* Device and host waits give up after this long unless option_attr.wait_timeout_ms (or
 * TDIST_WAIT_TIMEOUT_MS) says otherwise; the same budget as dl.wait's default. */
#define TDIST_DEFAULT_WAIT_TIMEOUT_MS 60000

typedef enum tdist_backend_t {
  TDIST_BACKEND_AUTO = 0, /* CUDA when built with it and a GPU is visible, else CPU */
  TDIST_BACKEND_CPU = 1,
  TDIST_BACKEND_CUDA = 2
} tdist_backend_t;

typedef struct tdist_option_attr {
  uint32_t data_op_engine_type; /* tdist_engine_t bitmask; default MTE */
  int32_t backend;              /* tdist_backend_t; default AUTO */
  int32_t device_id;            /* CUDA device; -1 = LOCAL_RANK modulo the visible devices */
  uint32_t shm_init_timeout_s;  /* bootstrap connect / rendezvous; default 120 */
  uint32_t control_timeout_s;   /* each control-plane operation; default 120 */
  uint64_t wait_timeout_ms;     /* device-side waits; 0 = forever; default TDIST_DEFAULT_WAIT_TIMEOUT_MS */
} tdist_option_attr_t;

typedef struct tdist_init_attr {
  int32_t my_rank;
  int32_t n_ranks;
  uint64_t local_mem_size;         /* symmetric heap bytes per PE (user part) */
  char ip_port[TDIST_IP_PORT_MAX]; /* "tcp://host:port" or "tcp6://[host]:port" */
  tdist_option_attr_t option_attr;
} tdist_init_attr_t;

/** Bootstrap-store TLS (the seed's set_conf_store_tls), before init. `tls_info` is a
 *  "key=value;..." list: ca, cert, key, verify_client (default 1: mutual TLS), verify_host
 *  (default 1); see docs/CONTRACT.md section 5. enable = 0 selects plain TCP. An explicit call
 *  wins over TDIST_STORE_TLS / TDIST_STORE_TLS_INFO. */
TDIST_EXPORT int tdist_set_conf_store_tls(int enable, const char *tls_info);

/** Fill `attr` with defaults (rank -1, heap 256 MiB, MTE, timeouts as documented above). */
TDIST_EXPORT int tdist_init_attr_default(tdist_init_attr_t *attr);
/** Collective over n_ranks processes. Rank 0 listens on ip_port, the others connect to it. */
TDIST_EXPORT int tdist_init(const tdist_init_attr_t *attr);

/** Unique id: rank 0 creates it (it names rank 0's store address), hands it to the other ranks by
 *  any means (MPI_Bcast, a file, torch.distributed), and every rank calls init_with_uniqueid. */
typedef struct tdist_uniqueid {
  char bytes[128];
} tdist_uniqueid_t;
TDIST_EXPORT int tdist_get_uniqueid(tdist_uniqueid_t *uid);
TDIST_EXPORT int tdist_init_with_uniqueid(const tdist_uniqueid_t *uid, int rank, int n_ranks,
                                          const tdist_init_attr_t *attr);
/** Initialise from the environment torchrun / tdist-run set: RANK, WORLD_SIZE, LOCAL_RANK,
 *  LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT. tdist's store listens on MASTER_PORT + 1 (torch's
 *  own TCPStore holds MASTER_PORT) unless TDIST_STORE_PORT is set. `attr` may be NULL (defaults);
 *  its rank/size/ip_port fields are ignored. */
TDIST_EXPORT int tdist_init_from_env(const tdist_init_attr_t *attr);
TDIST_EXPORT int tdist_finalize(void);
TDIST_EXPORT int tdist_initialized(void);

/* ---- symmetric heap (collective: every PE, same arguments, same order) ---- */
TDIST_EXPORT void *tdist_malloc(size_t size);
TDIST_EXPORT void *tdist_calloc(size_t count, size_t size);
TDIST_EXPORT void *tdist_align(size_t alignment, size_t size);
TDIST_EXPORT int tdist_free(void *ptr);
/** Heap offset of `ptr` (which must lie in this PE's heap), or -1 with TDIST_ERR_INVALID_PARAM. */
TDIST_EXPORT int64_t tdist_heap_offset(const void *ptr);
/** Bytes still allocatable as one block. */
TDIST_EXPORT size_t tdist_heap_free_bytes(void);

/** The device state of this PE (host copy). */
TDIST_EXPORT const tdist_device_state_t *tdist_host_device_state(void);

/* ---- host-side synchronisation and RMA ---- */
TDIST_EXPORT int tdist_host_barrier_all(void);

/* ---- teams (docs/CONTRACT.md section 8) ----
 * A team is a strided set of world PEs: members start, start + stride, ... (size of them, world
 * numbering), so a kernel reaches team PE r at world PE start + r * stride. A handle is the team's
 * index, the same on every member. Splits are collective over every world PE (as torch's new_group):
 * a PE outside the parent takes part too, passing the parent's handle or TDIST_TEAM_INVALID (what its
 * own split of the parent gave it), and gets TDIST_TEAM_INVALID. Every PE passes the same arguments;
 * a call that differs, or is wrong on one PE, fails on every PE and creates nothing. */
typedef int32_t tdist_team_t;
#define TDIST_TEAM_INVALID (-1)
#define TDIST_TEAM_WORLD 0
TDIST_EXPORT int tdist_team_my_pe(tdist_team_t team);
TDIST_EXPORT int tdist_team_n_pes(tdist_team_t team);
/** World PE of `team`'s member `team_pe` (-1 if out of range). */
TDIST_EXPORT int tdist_team_translate_pe(tdist_team_t src, int src_pe, tdist_team_t dst);
/** `team`'s members as world PEs start + i * stride, i < size (any output may be NULL). */
TDIST_EXPORT int tdist_team_world_pes(tdist_team_t team, int *start, int *stride, int *size);

/** What a split gives the new team(s). heap_bytes: a team heap of that many bytes (rounded up to
 *  256; 0 = none), reserved from the world heap on every PE, members or not (the heap stays
 *  symmetric; it returns to the world heap at tdist_finalize). Its first TDIST_TEAM_SYNC_BYTES
 *  (device_state.h) are the team's synchronisation words, zeroed on every PE before the split
 *  returns; tdist_team_malloc allocates from the rest. */
typedef struct tdist_team_config {
  uint64_t heap_bytes;
} tdist_team_config_t;

/** Members are parent PEs start, start+stride, ... (size of them); PEs outside the new team get
 *  *new_team = TDIST_TEAM_INVALID. `config` may be NULL (no team heap). Collective over every world
 *  PE. */
TDIST_EXPORT int tdist_team_split_strided_ex(tdist_team_t parent, int start, int stride, int size,
                                             const tdist_team_config_t *config, tdist_team_t *new_team);
/** tdist_team_split_strided_ex without a team heap. */
TDIST_EXPORT int tdist_team_split_strided(tdist_team_t parent, int start, int stride, int size,
                                          tdist_team_t *new_team);
/** NVSHMEM's 2-D split of `parent` (whose size must be a multiple of xrange): the x-teams are the
 *  consecutive groups of xrange parent PEs, the y-teams the parent PEs with one index in their x-team
 *  (stride xrange). Every member of the parent gets its own x-team and y-team. All x-teams share one
 *  world heap block of xconfig->heap_bytes (their members are disjoint), all y-teams another of
 *  yconfig->heap_bytes; either config may be NULL (no heap). Collective over every world PE. */
TDIST_EXPORT int tdist_team_split_2d(tdist_team_t parent, int xrange, const tdist_team_config_t *xconfig,
                                     tdist_team_t *xteam, const tdist_team_config_t *yconfig,
                                     tdist_team_t *yteam);
/** Local to the caller. Refused (TDIST_ERR_INVALID_PARAM) for the world team and for a team whose
 *  heap still has live allocations. The team heap's block stays reserved until tdist_finalize
 *  (returning it earlier would take a world collective that non-members are not in). */
TDIST_EXPORT int tdist_team_destroy(tdist_team_t team);

/* Team collectives: called by the team's members only, in the same order on every member; PEs
 * outside the team never take part nor wait for them, so teams that share no member run theirs at
 * the same time. Each is bounded by the control timeout, and an expiry names the team and the member
 * waited for. A PE that is not a member, an unknown or destroyed team, and (for the heap calls) a
 * team without a heap fail at once on the caller with TDIST_ERR_INVALID_PARAM. */

/** Allocation in the team heap: first fit, the same offsets on every member. Each call all-gathers
 *  (team call number, operation, size, alignment) among the members: calls that differ fail on every
 *  member with TDIST_ERR_COLLECTIVE_MISMATCH naming both; exhaustion is TDIST_ERR_MALLOC_FAILED on
 *  every member naming the team heap's size and what is free; a failed call changes nothing.
 *  tdist_team_free(team, NULL) takes part and frees nothing. */
TDIST_EXPORT void *tdist_team_malloc(tdist_team_t team, size_t size);
TDIST_EXPORT void *tdist_team_align(tdist_team_t team, size_t alignment, size_t size);
TDIST_EXPORT int tdist_team_free(tdist_team_t team, void *ptr);
/** Bytes still allocatable as one block from `team`'s heap (local; 0 and an error for a team without
 *  a heap or a PE outside it). */
TDIST_EXPORT size_t tdist_team_heap_free_bytes(tdist_team_t team);
/** Host barrier over the members (the control plane), after completing this PE's outstanding puts. */
TDIST_EXPORT int tdist_team_barrier(tdist_team_t team);
/** Every member contributes `nbytes` from `in`; `out` receives team size * nbytes, member order. A
 *  size that differs or a NULL buffer on one member fails on every member. */
TDIST_EXPORT int tdist_team_ctrl_allgather(tdist_team_t team, const void *in, void *out, size_t nbytes);

/* ---- control plane over the bootstrap store (host, collective over the world) ---- */
TDIST_EXPORT int tdist_ctrl_barrier(void);
/** Every PE contributes `nbytes` from `in`; `out` receives n_pes * nbytes, PE order. */
TDIST_EXPORT int tdist_ctrl_allgather(const void *in, void *out, size_t nbytes);
/** Every PE passes the same root and nbytes; a root or size that differs, a root out of range or a
 *  NULL buffer fails on every PE (TDIST_ERR_COLLECTIVE_MISMATCH / TDIST_ERR_INVALID_PARAM). */
TDIST_EXPORT int tdist_ctrl_broadcast(void *buf, size_t nbytes, int root);

/** For language bindings: this thread's next collective call (tdist_malloc, calloc, align, free,
 *  team_split_strided(_ex), team_split_2d, ctrl_allgather, ctrl_broadcast, and the team collectives
 *  team_malloc, team_align, team_free, team_ctrl_allgather) takes part with an argument this PE could
 *  not convert; the call fails on every participant with TDIST_ERR_INVALID_PARAM naming `why` and
 *  this PE, and changes nothing. A binding that raised before the call would leave the others
 *  waiting. (A team call that fails on this PE alone, before any exchange, e.g. from a PE outside
 *  the team, takes the rejection with it and names it.) */
TDIST_EXPORT int tdist_collective_reject(const char *why);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TDIST_TDIST_H */
