#!/usr/bin/python3
"""Plots a soak run's samples.csv (bench/soak.py) to a PNG: lawnd RSS, fds and threads, pending/outbox, CPU.

Usage: /usr/bin/python3 bench/plot_soak.py SAMPLES_CSV OUT_PNG [--title TEXT]
Needs Debian's python3-matplotlib (Agg backend: no display).
"""

import argparse
import csv

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise SystemExit("%s: no samples" % path)
    return rows


def series(rows, name, scale=1.0):
    xs, ys = [], []
    for r in rows:
        v = r.get(name, "")
        if v in ("", None):
            continue
        xs.append(float(r["t_s"]) / 60.0)
        ys.append(float(v) / scale)
    return xs, ys


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv")
    parser.add_argument("png")
    parser.add_argument("--title", default="lawnd soak")
    args = parser.parse_args()
    rows = load(args.csv)
    drain_t = next((float(r["t_s"]) / 60.0 for r in rows if r["phase"] == "drain"), None)

    fig, axes = plt.subplots(5, 1, figsize=(10, 13), sharex=True)
    ax = axes[0]
    ax.plot(*series(rows, "rss_kib", 1024.0), color="tab:blue", marker=".", label="lawnd VmRSS")
    ax.set_ylabel("MiB")
    rss = series(rows, "rss_kib", 1024.0)[1]
    ax.set_ylim(bottom=0)
    ax.set_title("lawnd RSS: first %.1f, max %.1f, last %.1f MiB" % (rss[0], max(rss), rss[-1]))
    ax.legend(loc="lower right")

    ax = axes[1]
    ax.plot(*series(rows, "fds"), color="tab:orange", marker=".", label="open fds")
    ax.plot(*series(rows, "threads"), color="tab:green", marker=".", label="threads")
    ax.set_ylim(bottom=0)
    ax.set_title("file descriptors and threads")
    ax.legend(loc="lower right")

    ax = axes[2]
    ax.plot(*series(rows, "pending"), color="tab:purple", label="pending timers")
    ax.plot(*series(rows, "outbox"), color="tab:red", label="outbox (all namespaces)")
    ax.plot(*series(rows, "nosub_outbox"), color="tab:brown", linestyle="--",
            label="outbox of the namespace without subscriber")
    ax.set_ylim(bottom=0)
    ax.set_title("GetStats")
    ax.legend(loc="upper left", fontsize="small")

    ax = axes[3]
    xs, cpu = series(rows, "lawnd_cpu_s")
    pct = [0.0] + [100.0 * (cpu[i] - cpu[i - 1]) / ((xs[i] - xs[i - 1]) * 60.0) if xs[i] > xs[i - 1] else 0.0
                   for i in range(1, len(xs))]
    ax.plot(xs, pct, color="tab:gray", label="lawnd CPU % (of one core)")
    ax.plot(*series(rows, "psi_cpu_some_avg10"), color="tab:red", alpha=0.6,
            label="host CPU pressure, some avg10 % (time runnable tasks waited for a core)")
    ax.set_ylim(0, 135)  # Room above the curves for the legend.
    ax.set_ylabel("%")
    ax.set_title("lawnd CPU and the machine's CPU pressure")
    ax.legend(loc="upper left", fontsize="small", ncol=2)

    ax = axes[4]
    load_rows = [r for r in rows if r["phase"] == "load"]  # The drain hands over soak-nosub's held backlog.
    for name, color, label in (("storage_writes_over_500ms", "tab:blue", "storage writes > 0.5 s"),
                               ("requests_over_1s", "tab:orange", "RPCs answered after > 1 s"),
                               ("expiries_over_1s", "tab:red",
                                "expirations handed over > 1 s after their deadline")):
        xs, cum = series(load_rows, name)
        if xs:
            ax.step(xs, [0.0] + [max(0.0, cum[i] - cum[i - 1]) for i in range(1, len(cum))], where="pre",
                    color=color, label=label)
    ax.set_ylim(bottom=0, top=max(5.0, ax.get_ylim()[1] * 1.4))
    ax.set_title("lawnd's slow events per sample interval during the load (its /metrics histograms)")
    ax.set_xlabel("minutes since the start of the load")
    ax.legend(loc="upper left", fontsize="small")

    for ax in axes:
        ax.grid(True, alpha=0.3)
        if drain_t is not None:
            ax.axvline(drain_t, color="black", linestyle=":", linewidth=1)
    if drain_t is not None:
        axes[0].text(drain_t, axes[0].get_ylim()[1], " drain", va="top", fontsize="small")
    fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.png, dpi=90)
    print("wrote %s" % args.png)


if __name__ == "__main__":
    main()
