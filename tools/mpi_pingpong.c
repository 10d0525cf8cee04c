/* mpi_pingpong.c: the network's latency (alpha) and inverse bandwidth (beta) between ranks 0
 * and 1, for the cost model of docs/distributed.md ("Scaling, measured and modelled").
 * Built and run by tools/scaling_bench.sh (not part of qmlpipe):
 *   mpicc -O2 tools/mpi_pingpong.c -o pingpong && srun -N2 -n2 --mpi=pmix ./pingpong
 * Prints, per message size, the best half round trip over the repetitions (the least
 * disturbed by the other processes of a shared machine), then alpha = the smallest half round
 * trip (the least of the sizes up to 512 bytes) and beta from the two largest sizes (the slope, so
 * alpha drops out). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) {
    if (rank == 0) fprintf(stderr, "mpi_pingpong: needs 2 ranks\n");
    MPI_Finalize();
    return 2;
  }
  enum { MAX_BYTES = 1 << 23 };
  char *buf = calloc(MAX_BYTES, 1);
  if (!buf) MPI_Abort(MPI_COMM_WORLD, 1);
  double t_small = 0, t_prev = 0, n_prev = 0, beta = 0;
  if (rank == 0) printf("%12s %14s %12s\n", "bytes", "half_rtt_us", "MB/s");
  for (long n = 8; n <= MAX_BYTES; n *= 4) {
    const int reps = n <= 65536 ? 200 : 20;
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      if (rank == 0) {
        MPI_Send(buf, (int)n, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(buf, (int)n, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Recv(buf, (int)n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, (int)n, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
      }
      const double half = (MPI_Wtime() - t0) / 2;
      if (half < best) best = half;
    }
    if (rank == 0) printf("%12ld %14.2f %12.1f\n", n, best * 1e6, (double)n / best * 1e-6);
    if (n == 8) t_small = best;
    if (n <= 512 && best < t_small) t_small = best;
    if (n_prev > 0) beta = (best - t_prev) / ((double)n - n_prev);
    t_prev = best;
    n_prev = (double)n;
  }
  if (rank == 0)
    printf("alpha %.2f us  beta %.3f ns/byte (%.2f GB/s)\n", t_small * 1e6, beta * 1e9,
           beta > 0 ? 1e-9 / beta : 0.0);
  free(buf);
  MPI_Finalize();
  return 0;
}
