#!/usr/bin/python3
"""scaling_model.py: the cost model of docs/distributed.md ("Scaling, measured and modelled").

  scaling_model.py OUTDIR      the table of tools/scaling_bench.sh's runs in OUTDIR: per case,
                               route, layout and stage, the measured seconds (the slowest
                               rank's, /budget/ranks), the MPI traffic (tools/mpi_stage_bytes.c's
                               logs) and the model's seconds
  scaling_model.py --eclipse [--rate GFLOPS] [--alpha US] [--node-gbs GBS] [--ranks-per-node K]
                   [--panel P]  (P > 0: the flow without W, its windows in panels of P (l, m)
                                columns, as `qmlpipe plan` chooses them; 0: the flow before)
                               the model's prediction for ECLIPSE's largest run (nside 64 TQU,
                               n_pix 87027, n_modes 110580, 1000 maps, 1140 parameters) on 96
                               ranks, grid 8 x 12, block 64: the route and flops of `qmlpipe plan`

The model of a stage on R ranks (grid Pr x Pc, block b), summed over its operations:
  flops / (min(R, cores) x rate) + messages x alpha + 8 words x beta,
rate the measured dgemm rate of one core (potrf's for pdpotrf and pdtrtri); words and messages
per process of a block-cyclic right-looking algorithm: at each of the k/b steps a panel is
broadcast along the process rows (when Pc > 1) and one along the process columns (when Pr > 1),
each broadcast ceil(log2 P) messages (a tree) and its panel's words received once (pipelined).
"""
import glob
import math
import os
import sys


def lg(p):
    return math.ceil(math.log2(p)) if p > 1 else 0


def op_cost(op, pr, pc, b):
    """(words, messages) per process of one operation on a pr x pc grid, block b."""
    kind = op[0]
    row = 1 if pc > 1 else 0  # a panel broadcast along the process rows
    col = 1 if pr > 1 else 0
    steps_msgs = lg(pr) + lg(pc)
    if kind == "gemm":  # C (m x n) += A (m x k) B (k x n)
        _, m, n, k = op
        return k * (m / pr * row + n / pc * col), k / b * steps_msgs
    if kind == "gemm_bc":  # C (m x n) = A^T B, A (k x m) stays: PBLAS's "BC" variant, which
        # pdgemm picks when n << m, k (pdgemm_.c's BCest): B's n columns gathered along the
        # process rows, C's partial sums reduced along the process columns
        _, m, n, k = op
        return k * n / pr * row + m * n / pc * col, n / b * steps_msgs + steps_msgs
    if kind == "syrk":  # C (m x m) += A^T A, A k x m
        _, m, k = op
        return k * (m / pr * row + m / pc * col), k / b * steps_msgs
    if kind in ("trsm", "trmm"):  # L (n x n) triangular, B n x k
        _, n, k = op
        return n * (n / (2 * pr) * row + k / pc * col), n / b * steps_msgs
    if kind in ("potrf", "trtri"):  # n x n: the column panel of the trailing matrix, both ways
        _, n = op
        return n * n / 2 * (row / pr + col / pc), n / b * (steps_msgs + 1)
    if kind == "getrf":  # as potrf on the whole square, plus the pivot search of each column
        _, n = op
        return n * n * (row / pr + col / pc), n / b * (steps_msgs + 1) + 2 * n * lg(pr)
    if kind == "getrs":  # two triangular solves with k right-hand sides
        _, n, k = op
        w, m = op_cost(("trsm", n, k), pr, pc, b)
        return 2 * w, 2 * m
    if kind == "allreduce":  # w words summed over the R ranks
        _, w = op
        r = pr * pc
        return (2 * w * (r - 1) / r, 2 * lg(r)) if r > 1 else (0, 0)
    if kind == "redistribute":  # a matrix of w words moved onto another layout (all to all)
        _, w = op
        r = pr * pc
        return (w * (r - 1) / r / r, r - 1) if r > 1 else (0, 0)
    raise ValueError(kind)


def flops_of(op):
    kind = op[0]
    if kind in ("gemm", "gemm_bc"):
        return 2.0 * op[1] * op[2] * op[3]
    if kind == "syrk":
        return 1.0 * op[1] * op[1] * op[2]
    if kind in ("trsm", "trmm"):
        return 1.0 * op[1] * op[1] * op[2]
    if kind in ("potrf", "trtri"):
        return op[1] ** 3 / 3.0
    if kind == "getrf":
        return 2.0 * op[1] ** 3 / 3.0
    if kind == "getrs":
        return 2.0 * op[1] ** 2 * op[2]
    return 0.0


def stage_ops(route, stage, n, m, k, np_, fields):
    """The stage's distributed operations (pipeline/stages/: stage_basis.c, harmonic_route.c,
    harmonic_smw.c, harmonic_bias.c, harmonic_spectra.c, stage_fisher.c)."""
    blocks = 1 if fields == "T" else (10 if fields == "QU" else 45)
    if route == "pixel_direct":
        return {"basis_setup": [("potrf", n), ("trtri", n)],
                "fisher_run": [("trmm", n, n)] * (2 * (np_ + 1)) + [("allreduce", np_ * np_)],
                "spectra_run": [("trmm", n, k), ("allreduce", np_ * k)]}.get(stage, [])
    if route == "harmonic_projected":
        return {"basis_setup": [("potrf", n), ("trsm", n, m), ("syrk", m, n)],
                "fisher_run": [("trsm", n, m), ("redistribute", m * m),
                               ("allreduce", blocks * m / len(fields))],
                "spectra_run": [("trsm", n, k), ("gemm", m, k, n)]}.get(stage, [])
    if route == "harmonic_smw":
        return {"basis_setup": [("gemm", m, m, n), ("redistribute", m * m), ("getrf", m)],
                "fisher_run": [("getrs", m, m), ("allreduce", np_ * np_)],
                "spectra_run": [("gemm", m, k, n), ("getrs", m, k)]}.get(stage, [])
    return []


def projected_without_w_ops(stage, n, m, k, fields, panel):
    """The projection route's operations since issue 42 (no W: docs/memory-model.md,
    "Projection without W"): basis_setup potrf and trsm; fisher_run the windows of each panel,
    a pdgemm per field pair with the rows down to the panel's end (the upper trapezoid; the
    panel is the narrow side, so PBLAS moves it and the window, not Y's rows: gemm_bc), Z =
    L^-T Y, the partner columns of the cross-field spectra lined up (2 n m words: TE, TB, EB
    both ways) and the block sums reduced; spectra_run z = Z^T x."""
    nf = len(fields)
    n_lm = m / nf
    blocks = 1 if fields == "T" else (10 if fields == "QU" else 45)
    if stage == "basis_setup":
        return [("potrf", n), ("trsm", n, m)]
    if stage == "fisher_run":
        ops, col0 = [], 0.0
        while col0 < n_lm:
            width = min(panel, n_lm - col0)
            ops += [("gemm_bc", col0 + width, width, n)] * (nf * nf)
            col0 += width
        cross = 2 * n * m if nf == 3 else 0
        return ops + [("trsm", n, m), ("redistribute", cross), ("allreduce", blocks * n_lm)]
    if stage == "spectra_run":
        return [("gemm", m, k, n)]
    return []


def model_stage(ops, stage_flops, r, pr, pc, b, cores, gemm, potrf, alpha, beta):
    """Seconds: (compute, alpha term, beta term, words, messages)."""
    words = msgs = 0.0
    fl_potrf = fl_other = 0.0
    for op in ops:
        w, mm = op_cost(op, pr, pc, b)
        words += w
        msgs += mm
        if op[0] in ("potrf", "trtri"):
            fl_potrf += flops_of(op)
        else:
            fl_other += flops_of(op)
    if stage_flops is not None:  # qmlpipe's own count decides; the ops only split it
        fl_other = max(stage_flops - fl_potrf, 0.0)
    c = min(r, cores)
    compute = fl_potrf / (c * potrf) + fl_other / (c * gemm)
    return compute, msgs * alpha, 8 * words * beta, words, msgs


def read_rates(out):
    t = open(os.path.join(out, "rates.txt")).read().split()
    gemm = float(t[2]) * 1e9
    potrf = float(t[6]) * 1e9

    def ab(name):
        last = open(os.path.join(out, name)).read().strip().splitlines()[-1].split()
        return float(last[1]) * 1e-6, float(last[4]) * 1e-9

    return gemm, potrf, ab("pingpong_2nodes.txt"), ab("pingpong_1node.txt")


def traffic(bytes_dir):
    """Per stage: (sum over ranks of MiB sent point to point + received in collectives,
    the largest rank's, the largest rank's message count, its seconds inside MPI)."""
    ranks = []
    for path in sorted(glob.glob(os.path.join(bytes_dir, "rank*.txt"))):
        points, marks = [], {}
        for line in open(path):
            f = line.split()
            if f[0] == "A":
                points.append([float(x) for x in f[2:]])
            elif f[0] in "SE":
                marks[(f[0], f[1])] = int(f[2])
                if len(f) > 3:  # rank 0's own counters at the stage line
                    marks[(f[0] + "c", f[1])] = [float(x) for x in f[3:]]
        ranks.append((points, marks))
    marks = ranks[0][1] if ranks else {}
    res = {}
    for (kind, stage), _ in marks.items():
        if kind != "S" or ("E", stage) not in marks:
            continue
        ks, ke = marks[("S", stage)], marks[("E", stage)]
        tot = mx = msgs = mpi = 0.0
        for points, _ in ranks:
            def at(k):
                return points[k - 1] if k > 0 else [0.0] * 5
            a, e = at(ks), at(ke)
            by = (e[0] - a[0]) + (e[2] - a[2])
            tot += by
            mx = max(mx, by)
            msgs = max(msgs, (e[1] - a[1]) + (e[3] - a[3]))
            mpi = max(mpi, e[4] - a[4])
        if stage == "covariance_setup" and ("Sc", stage) in marks:
            # The warm-up's traffic lands between the last agreement and this stage's start:
            # rank 0's own counters at its stage lines leave it out (the other ranks have none).
            a, e = marks[("Sc", stage)], marks[("Ec", stage)]
            by = (e[0] - a[0]) + (e[2] - a[2])
            tot = mx = by
            msgs, mpi = (e[1] - a[1]) + (e[3] - a[3]), e[4] - a[4]
        res[stage] = (tot / 2 ** 20, mx / 2 ** 20, msgs, mpi)
    return res


STAGES = ["covariance_setup", "basis_setup", "fisher_run", "spectra_run"]
LAYOUTS = {"1r": (1, 1, 1), "2r1n": (2, 1, 1), "2r2n": (2, 1, 2), "4r2n": (4, 2, 2)}


def table(out):
    import h5py

    gemm, potrf, (a2, b2), (a1, b1) = read_rates(out)
    cores = os.cpu_count() or 1
    print(f"kernel rates (one core): dgemm {gemm * 1e-9:.1f}, dpotrf {potrf * 1e-9:.1f} GFLOP/s; "
          f"between nodes alpha {a2 * 1e6:.1f} us beta {b2 * 1e9:.3f} ns/B; within a node "
          f"alpha {a1 * 1e6:.1f} us beta {b1 * 1e9:.3f} ns/B; cores {cores}")
    print(f"{'case':<22} {'layout':<6} {'stage':<17} {'meas s':>8} {'model s':>8} {'ratio':>6} "
          f"{'comp':>7} {'alpha':>7} {'beta':>7} {'MiB all':>8} {'MiB max':>8} "
          f"{'model MiB':>9} {'msgs':>7} {'in MPI s':>8}")
    cov1 = {}
    for path in sorted(glob.glob(os.path.join(out, "runs", "*.h5"))):
        label = os.path.basename(path)[:-3]
        case, lname = label.rsplit("-", 1)
        r, pr, nodes = LAYOUTS[lname][0], LAYOUTS[lname][1], LAYOUTS[lname][2]
        pc = r // pr
        alpha, beta = (a2, b2) if nodes > 1 else (a1, b1)
        with h5py.File(path) as f:
            at = f.attrs
            n, m, k, np_ = (int(at["n_pix"]), int(at["n_modes"]), int(at["n_maps"]),
                            int(at["n_params"]))
            route, fields = at["path_used"], at["fields"]
            route = route.decode() if isinstance(route, bytes) else route
            fields = fields.decode() if isinstance(fields, bytes) else fields
            sec = {}
            for i, s in enumerate(STAGES):
                if "budget/ranks/seconds_max" in f:
                    sec[s] = float(f["budget/ranks/seconds_max"][i])
                else:
                    sec[s] = float(f["budget/" + s].attrs["seconds"])
            fl = {s: float(f["budget/" + s].attrs["flops"]) for s in STAGES}
        tr = traffic(os.path.join(out, "runs", label + ".bytes"))
        if r == 1:
            cov1[case] = sec["covariance_setup"]
        for s in STAGES:
            if s == "covariance_setup":  # Legendre / Wigner sums, no BLAS: its 1-rank time split
                comp, ta, tb, w = cov1.get(case, sec[s]) / min(r, cores), 0.0, 0.0, 0.0
            else:
                ops = stage_ops(route, s, n, m, k, np_, fields)
                comp, ta, tb, w, _ = model_stage(ops, fl[s], r, pr, pc, 64, cores, gemm, potrf,
                                                  alpha, beta)
            mod = comp + ta + tb
            t = tr.get(s, (0, 0, 0, 0))
            ratio = sec[s] / mod if mod > 0 else float("nan")
            print(f"{case:<22} {lname:<6} {s:<17} {sec[s]:8.3f} {mod:8.3f} {ratio:6.2f} "
                  f"{comp:7.3f} {ta:7.3f} {tb:7.3f} {t[0]:8.2f} {t[1]:8.2f} "
                  f"{8 * w * r / 2 ** 20:9.2f} {t[2]:7.0f} {t[3]:8.3f}")


def eclipse(argv):
    def opt(name, default):
        return float(argv[argv.index(name) + 1]) if name in argv else default

    rate = opt("--rate", 35.0) * 1e9
    potrf = rate * opt("--potrf-share", 0.8)
    alpha = opt("--alpha", 1.5) * 1e-6
    per_node = opt("--ranks-per-node", 32)
    beta = per_node / (opt("--node-gbs", 8.0) * 1e9)  # a node's link shared by its ranks
    n, m, k, np_, r, pr, pc, b = 87027, 110580, 1000, 1140, 96, 8, 12, 64
    panel = int(opt("--panel", 0))  # 0: the flow before issue 42 (W whole in basis_setup)
    print(f"ECLIPSE nside 64 TQU: n_pix {n}, n_modes {m}, {k} maps, {np_} parameters, "
          f"R {r} = {pr} x {pc}, block {b}; dgemm {rate * 1e-9:.1f} GFLOP/s a core, potrf "
          f"{potrf * 1e-9:.1f}, alpha {alpha * 1e6:.1f} us, beta {beta * 1e9:.2f} ns/B a rank")
    total = 0.0
    print(f"{'stage':<17} {'GFLOP':>10} {'compute s':>10} {'alpha s':>8} {'beta s':>8} "
          f"{'words/rank':>11} {'total s':>8}")
    for s in STAGES[1:]:
        ops = (projected_without_w_ops(s, n, m, k, "TQU", panel) if panel > 0
               else stage_ops("harmonic_projected", s, n, m, k, np_, "TQU"))
        fl = sum(flops_of(o) for o in ops)
        comp, ta, tb, w, _ = model_stage(ops, None, r, pr, pc, b, r, rate, potrf, alpha, beta)
        total += comp + ta + tb
        print(f"{s:<17} {fl * 1e-9:10.0f} {comp:10.1f} {ta:8.1f} {tb:8.1f} {w:11.3e} "
              f"{comp + ta + tb:8.1f}")
    print(f"total (stages modelled; covariance_setup apart) {total:.0f} s; "
          f"aim 0.2 x 3507 = {0.2 * 3507:.0f} s")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--eclipse":
        eclipse(sys.argv[1:])
    elif len(sys.argv) == 2:
        table(sys.argv[1])
    else:
        print(__doc__)
        sys.exit(2)
