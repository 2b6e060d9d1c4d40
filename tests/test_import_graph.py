"""The import graph of the repo's packages has no cycle.

grimp reads every import statement, including those inside function bodies
and under TYPE_CHECKING: a loop hidden in a function is still a loop. A
cycle shows up here as the modules of one strongly connected component."""

from __future__ import annotations

import grimp

PACKAGES = ("app", "agents", "sandbox", "knowledge_base", "taxonomy")


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    modules = sorted(graph.modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m) & graph.modules) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if i < len(edges[node]):
                work.append((node, i + 1))
                nxt = edges[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


def test_cycle_finder_sees_a_loop() -> None:
    graph = grimp.ImportGraph()
    for name in ("p", "p.a", "p.b", "p.c"):
        graph.add_module(name)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.a")
    graph.add_import(importer="p.c", imported="p.a")
    assert cycles(graph) == [["p.a", "p.b"]]


def test_no_import_cycles() -> None:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    loops = cycles(graph)
    assert not loops, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in loops)


def sibling_cycles(graph: grimp.ImportGraph) -> list[tuple[str, list[str]]]:
    """Per package, its children (subpackages and modules, each with everything under it)
    that import one another in a loop: a folder that imports a sibling importing it back."""
    found = []
    for parent in sorted(m for m in graph.modules if graph.find_children(m)):
        kids = sorted(graph.find_children(parent))
        collapsed = grimp.ImportGraph()
        for kid in kids:
            collapsed.add_module(kid)
        owner = {m: kid for kid in kids for m in {kid} | graph.find_descendants(kid)}
        for kid in kids:
            for m in {kid} | graph.find_descendants(kid):
                for target in graph.find_modules_directly_imported_by(m):
                    if owner.get(target, kid) != kid:
                        collapsed.add_import(importer=kid, imported=owner[target])
        found += [(parent, loop) for loop in cycles(collapsed)]
    return found


def test_sibling_finder_sees_two_folders_in_a_loop() -> None:
    graph = grimp.ImportGraph()
    for name in ("p", "p.a", "p.a.x", "p.b", "p.b.y", "p.c"):
        graph.add_module(name)
    graph.add_import(importer="p.a.x", imported="p.b.y")  # no module loop, but p.a <-> p.b
    graph.add_import(importer="p.b.y", imported="p.a")
    graph.add_import(importer="p.c", imported="p.a.x")
    assert sibling_cycles(graph) == [("p", ["p.a", "p.b"])]


def test_no_folder_imports_a_sibling_that_imports_it_back() -> None:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    loops = sibling_cycles(graph)
    assert not loops, "sibling loops:\n" + "\n".join(f"in {p}: " + " <-> ".join(c) for p, c in loops)
