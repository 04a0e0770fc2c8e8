"""Shortest paths on weighted graphs with Dijkstra's algorithm."""

from __future__ import annotations

import heapq
from collections.abc import Mapping


def dijkstra(graph: Mapping[str, Mapping[str, float]], start: str) -> dict[str, float]:
    """Return the distance from `start` to every reachable node.

    Edge weights must be non-negative; the priority queue holds (distance, node) pairs and a node is
    final the first time it is popped.
    """
    dist = {start: 0.0}
    queue = [(0.0, start)]
    done: set[str] = set()
    while queue:
        d, node = heapq.heappop(queue)
        if node in done:
            continue
        done.add(node)
        for neighbour, weight in graph.get(node, {}).items():
            if weight < 0:
                raise ValueError(f"negative edge {node}->{neighbour}")
            nd = d + weight
            if nd < dist.get(neighbour, float("inf")):
                dist[neighbour] = nd
                heapq.heappush(queue, (nd, neighbour))
    return dist


def path_length(graph: Mapping[str, Mapping[str, float]], path: list[str]) -> float:
    """Sum the weights along a path, failing loudly on a missing edge."""
    total = 0.0
    for a, b in zip(path, path[1:]):
        try:
            total += graph[a][b]
        except KeyError:
            raise KeyError(f"no edge {a}->{b}") from None
    return total


if __name__ == "__main__":
    roads = {"a": {"b": 7, "c": 9, "f": 14}, "b": {"c": 10, "d": 15}, "c": {"d": 11, "f": 2}, "d": {"e": 6}, "f": {"e": 9}}
    print(dijkstra(roads, "a"))
