"""A report's numbers as text ("12.5%", "1.84x", "scaled: ..."), shared by the
CSV/markdown renderings (report.py), the HTML one (html.py) and `kforge batch`."""

from __future__ import annotations

from typing import Any

from . import metrics as M


def sizes_note(scaled: dict[str, Any] | None) -> str:
    """"scaled: batch_size 4096->768, dim 393216->65536 (0.40 GB of 1 GB)"; empty when the problem ran at its sizes."""
    if not scaled:
        return ""
    changes = ", ".join(f"{k.replace('_kforge_dim', 'get_inputs literal #')} {scaled['defaults'][k]}->{v}"
                        for k, v in scaled["sizes"].items() if v != scaled["defaults"].get(k))
    return f"scaled: {changes} ({scaled['bytes'] / 1e9:.2f} GB of {scaled['budget_gb']:g} GB)"


def roof_cell(row: dict[str, Any]) -> str:
    """A problem's fractions of its roofline bound: "kernel 42% / eager 18% / compile 20% (memory)"."""
    if row.get("roofline_kernel") is None:
        return "n/a"
    return " / ".join(f"{p} {fmt(row.get(f'roofline_{p}'), '%')}" for p in M.ROOF_PARTIES) \
        + f" ({row.get('bound_by') or '?'})"


def fmt(value: Any, kind: str = "") -> str:
    if value is None:
        return "n/a"
    if kind == "%":
        return f"{100 * value:.1f}%"
    if kind == "x":
        return f"{value:.2f}x"
    if kind == "$":
        return f"${value:.4f}"
    if kind == "s":
        return f"{value:.1f} s"
    return str(value)


def headline_rows(view: dict[str, Any]) -> list[tuple[str, str]]:
    rows = [("correctness", f"{fmt(view['correctness_rate'], '%')} ({view['correct']}/{view['records']})")]
    for base in M.BASELINES:
        curve = view[f"fast_p_{base}"]
        rows.append((f"fast_p vs {base}", "  ".join(f"p={p}: {fmt(v, '%')}" for p, v in curve.items())))
        rows.append((f"geomean speedup vs {base} (correct only)", fmt(view[f"geomean_speedup_{base}"], "x")))
    roof = view.get("geomean_roofline") or {}
    if any(roof.values()):
        rows.append(("geomean fraction of the roofline bound (correct only)",
                     " / ".join(f"{p} {fmt(roof[p], '%')}" for p in M.ROOF_PARTIES)
                     + f" over {view['roofline_records']} record(s) with the machine's ceilings"))
    if "fastest" in view:
        f = view["fastest"]
        rows.append(("fastest of kernel / eager / torch.compile",
                     f"a kernel won {view['kernel_won']} of {view['records']} (kernel {f['kernel']}, eager {f['eager']}, "
                     f"torch.compile {f['torch.compile']}, unknown {f['unknown']}); "
                     f"{view['kernel_beats_eager']} kernel(s) faster than eager"))
    h = view["held_out"]
    rows.append(("held-out sizes pass rate", f"{fmt(h['pass_rate'], '%')} (pass {h['pass']}, fail {h['fail']}, "
                                             f"unavailable {h['unavailable']})"))
    c = view["cost"]
    rows.append(("tokens / dollars / wall", f"{c['tokens']} / {fmt(c['usd'], '$')} / {fmt(c['wall_s'], 's')} in all; "
                                            f"per record {fmt(c['tokens_per_record'])} / {fmt(c['usd_per_record'], '$')}"
                                            f" / {fmt(c['wall_s_per_record'], 's')}"))
    return rows
