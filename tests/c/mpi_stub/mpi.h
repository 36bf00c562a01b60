/* A stand-in mpi.h: the types, constants and prototypes the core names,
 * and nothing behind them.  The test suite compiles the core against it with
 * the plain C compiler (tests/helpers.py, core_without_mpi) and runs only
 * what needs no MPI (--list --json, --expand-sizes): the core's own facts,
 * read where no MPI is installed.  The functions are left unresolved at
 * link time; a call to one would end the program. */
#ifndef CS_MPI_STUB_H
#define CS_MPI_STUB_H

typedef int MPI_Comm;
typedef int MPI_Datatype;
typedef int MPI_Op;
typedef int MPI_Request;
typedef int MPI_Win;
typedef int MPI_Info;
typedef int MPI_T_enum;
typedef void *MPI_T_cvar_handle;
typedef long MPI_Aint;
typedef long long MPI_Count;
typedef struct MPI_Status {
  int MPI_SOURCE, MPI_TAG, MPI_ERROR;
} MPI_Status;

#define MPI_VERSION 3
#define MPI_SUBVERSION 1
#define MPI_SUCCESS 0
#define MPI_UNDEFINED (-32766)
#define MPI_PROC_NULL (-1)
#define MPI_COMM_NULL ((MPI_Comm)0)
#define MPI_COMM_WORLD ((MPI_Comm)1)
#define MPI_COMM_TYPE_SHARED 1
#define MPI_DATATYPE_NULL ((MPI_Datatype)0)
#define MPI_CHAR ((MPI_Datatype)1)
#define MPI_BYTE ((MPI_Datatype)2)
#define MPI_INT ((MPI_Datatype)3)
#define MPI_UNSIGNED ((MPI_Datatype)4)
#define MPI_LONG ((MPI_Datatype)5)
#define MPI_UNSIGNED_LONG ((MPI_Datatype)6)
#define MPI_LONG_LONG ((MPI_Datatype)7)
#define MPI_UNSIGNED_LONG_LONG ((MPI_Datatype)8)
#define MPI_DOUBLE ((MPI_Datatype)9)
#define MPI_C_BOOL ((MPI_Datatype)10)
#define MPI_COUNT ((MPI_Datatype)11)
#define MPI_SUM ((MPI_Op)1)
#define MPI_MAX ((MPI_Op)2)
#define MPI_MIN ((MPI_Op)3)
#define MPI_REQUEST_NULL ((MPI_Request)0)
#define MPI_WIN_NULL ((MPI_Win)0)
#define MPI_INFO_NULL ((MPI_Info)0)
#define MPI_STATUS_IGNORE ((MPI_Status *)0)
#define MPI_STATUSES_IGNORE ((MPI_Status *)0)
#define MPI_THREAD_SINGLE 0
#define MPI_T_BIND_NO_OBJECT 0
#define MPI_T_ENUM_NULL ((MPI_T_enum)0)
#define MPI_MAX_ERROR_STRING 256
#define MPI_MAX_LIBRARY_VERSION_STRING 8192
#define MPI_MAX_PROCESSOR_NAME 256

int MPI_Init(int *argc, char ***argv);
int MPI_Finalize(void);
int MPI_Abort(MPI_Comm comm, int code);
int MPI_Get_version(int *version, int *subversion);
int MPI_Get_library_version(char *version, int *len);
int MPI_Get_processor_name(char *name, int *len);
int MPI_Error_string(int code, char *text, int *len);
int MPI_Comm_rank(MPI_Comm comm, int *rank);
int MPI_Comm_size(MPI_Comm comm, int *size);
int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *out);
int MPI_Comm_free(MPI_Comm *comm);
int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *out);
int MPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm *out);
int MPI_Dims_create(int nnodes, int ndims, int dims[]);
int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder,
                    MPI_Comm *out);
int MPI_Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[]);
int MPI_Cart_shift(MPI_Comm comm, int direction, int disp, int *source, int *dest);
int MPI_Send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm);
int MPI_Recv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
             MPI_Status *status);
int MPI_Isend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,
              MPI_Request *req);
int MPI_Irecv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
              MPI_Request *req);
int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype sdt, int dest, int stag, void *rbuf,
                 int rcount, MPI_Datatype rdt, int source, int rtag, MPI_Comm comm,
                 MPI_Status *status);
int MPI_Wait(MPI_Request *req, MPI_Status *status);
int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[]);
int MPI_Barrier(MPI_Comm comm);
int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm);
int MPI_Reduce(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, int root,
               MPI_Comm comm);
int MPI_Allreduce(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int MPI_Reduce_scatter_block(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op,
                             MPI_Comm comm);
int MPI_Gather(const void *s, int sc, MPI_Datatype sdt, void *r, int rc, MPI_Datatype rdt,
               int root, MPI_Comm comm);
int MPI_Gatherv(const void *s, int sc, MPI_Datatype sdt, void *r, const int rcs[],
                const int displs[], MPI_Datatype rdt, int root, MPI_Comm comm);
int MPI_Scatter(const void *s, int sc, MPI_Datatype sdt, void *r, int rc, MPI_Datatype rdt,
                int root, MPI_Comm comm);
int MPI_Scatterv(const void *s, const int scs[], const int displs[], MPI_Datatype sdt, void *r,
                 int rc, MPI_Datatype rdt, int root, MPI_Comm comm);
int MPI_Allgather(const void *s, int sc, MPI_Datatype sdt, void *r, int rc, MPI_Datatype rdt,
                  MPI_Comm comm);
int MPI_Alltoall(const void *s, int sc, MPI_Datatype sdt, void *r, int rc, MPI_Datatype rdt,
                 MPI_Comm comm);
int MPI_Type_vector(int count, int blocklen, int stride, MPI_Datatype old, MPI_Datatype *out);
int MPI_Type_commit(MPI_Datatype *dt);
int MPI_Type_free(MPI_Datatype *dt);
int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                            void *baseptr, MPI_Win *win);
int MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr);
int MPI_Win_free(MPI_Win *win);
int MPI_T_init_thread(int required, int *provided);
int MPI_T_finalize(void);
int MPI_T_cvar_get_num(int *num);
int MPI_T_cvar_get_index(const char *name, int *index);
int MPI_T_cvar_get_info(int index, char *name, int *name_len, int *verbosity,
                        MPI_Datatype *dt, MPI_T_enum *et, char *desc, int *desc_len, int *bind,
                        int *scope);
int MPI_T_cvar_handle_alloc(int index, void *obj, MPI_T_cvar_handle *h, int *count);
int MPI_T_cvar_handle_free(MPI_T_cvar_handle *h);
int MPI_T_cvar_read(MPI_T_cvar_handle h, void *buf);
int MPI_T_enum_get_info(MPI_T_enum et, int *num, char *name, int *name_len);
int MPI_T_enum_get_item(MPI_T_enum et, int index, int *value, char *name, int *name_len);

#endif
