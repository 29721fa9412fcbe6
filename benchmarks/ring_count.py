"""计时：在 N = 1024 的单向 / 双向环和 16x16 环面上“数”一遍四种集合通信要多久

运行：``python benchmarks/ring_count.py``。这是基准脚本，不是计时测试；
每项取 3 次中最快的一次，同时打印数出来的步数与最忙有向链路的字节数（V = 1 GiB）。
"""

from __future__ import annotations

import time

from shardlab import ring
from shardlab.ring import Ring, Torus

V = 2.0**30
TOPOLOGIES = {
    "ring N=1024 one-way": Ring(1024, bidirectional=False),
    "ring N=1024 bidir": Ring(1024, bidirectional=True),
    "torus 16x16 bidir": Torus((16, 16)),
}


def best_of(fn, repeat: int = 3) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    header = f"{'topology':<20} {'collective':<15} {'seconds':>8} {'steps':>6} {'max link bytes / V':>19}"
    print(header)
    print("-" * len(header))
    for name, topo in TOPOLOGIES.items():
        for coll in ring.COLLECTIVES:
            sec, res = best_of(lambda topo=topo, coll=coll: ring.count(coll, topo, V))
            print(f"{name:<20} {coll:<15} {sec:8.3f} {res.n_steps:6d} {res.max_link_bytes / V:19.6f}")


if __name__ == "__main__":
    main()
