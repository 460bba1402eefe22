// The stylesheet that every HTML page of the reports embeds, and the start and end of every page
// (page_head, page_tail): the pages are self-contained files, readable offline and from a CI
// artifact store.
#pragma once

#include <iterator>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "reports/escape.h"

namespace nvfp4::reports {

inline constexpr std::string_view kPageStyle = R"css(
:root{--tie:#fff3c4;--bad:#d62728;--bad-bg:#fde2e1;--ok:#2ca02c;--ok-bg:#e3f4e3;--grey:#e4e4e7;--fg:#1f2328;--muted:#636c76;--line:#d0d7de;--head:#f6f8fa}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI","DejaVu Sans",Helvetica,Arial,sans-serif;color:var(--fg);margin:0;padding:18px 20px 40px;max-width:1400px}
h1{font-size:20px;margin:0 0 4px}
h2{font-size:16px;margin:26px 0 8px;padding-bottom:3px;border-bottom:1px solid var(--line)}
h3{font-size:14px;margin:16px 0 6px}
code,pre,.mono,td.n,th.n,.d,.h{font-family:ui-monospace,"SFMono-Regular","DejaVu Sans Mono",Menlo,Consolas,monospace}
.muted{color:var(--muted)}
.badge{display:inline-block;font-weight:700;font-size:12px;padding:1px 8px;border-radius:10px;color:#fff;vertical-align:2px;margin-right:6px}
.badge.fail{background:var(--bad)}.badge.pass{background:var(--ok)}
.meta{color:var(--muted);margin:0 0 12px}
.meta b{color:var(--fg);font-weight:600}
.verdict{border-left:4px solid var(--bad);background:#fff5f5;padding:8px 12px;margin:10px 0;font-size:15px}
.verdict.ok{border-color:var(--ok);background:#f3fbf3}
.count{font-size:15px;margin:6px 0}
.count span{font-weight:700;color:var(--bad);font-family:ui-monospace,"DejaVu Sans Mono",monospace}
.replay{display:flex;gap:8px;align-items:center;margin:8px 0}
.replay code{background:var(--head);border:1px solid var(--line);border-radius:4px;padding:4px 8px;white-space:pre;overflow-x:auto;max-width:100%}
button{font:12px system-ui,sans-serif;padding:3px 8px;border:1px solid var(--line);border-radius:4px;background:#fff;cursor:pointer}
pre{background:var(--head);border:1px solid var(--line);border-radius:4px;padding:8px 10px;font-size:12px;overflow-x:auto;max-height:360px;margin:4px 0}
table{border-collapse:collapse;font-size:12.5px;margin:4px 0}
th,td{border:1px solid var(--line);padding:2px 7px;text-align:left;vertical-align:top}
th{background:var(--head);font-weight:600}
td.n,th.n{text-align:right;white-space:nowrap}
tr.bad td,td.bad{background:var(--bad-bg)}
td.bad{color:#8b0000;font-weight:600}
.d{display:block}.h{display:block;color:var(--muted);font-size:11px}
.scroll{overflow-x:auto;max-width:100%}
.row{display:flex;flex-wrap:wrap;gap:0 48px;align-items:flex-start}
.row>section{min-width:300px}
.maps{display:flex;flex-wrap:wrap;gap:18px 28px;align-items:flex-start}
figure{margin:0}
figcaption{font-size:12px;color:var(--muted);margin-top:2px}
figcaption b{color:var(--fg)}
svg.heatmap{display:block;background:#fff}
svg.heatmap text{font:10px ui-monospace,"DejaVu Sans Mono",monospace;fill:var(--muted)}
svg.heatmap text.axis{font:11px system-ui,"DejaVu Sans",sans-serif;fill:var(--fg)}
svg.heatmap rect{fill:var(--grey)}
svg.heatmap rect.m{fill:var(--bad)}
svg.ulpmap{display:block;background:#fff}
svg.ulpmap text{font:10px ui-monospace,"DejaVu Sans Mono",monospace;fill:var(--muted)}
svg.ulpmap text.axis{font:11px system-ui,"DejaVu Sans",sans-serif;fill:var(--fg)}
.bar{display:inline-block;height:10px;vertical-align:-1px}
.legend{font-size:12px;color:var(--muted);margin:2px 0 8px}
.sw{display:inline-block;width:10px;height:10px;vertical-align:-1px;margin:0 4px 0 10px}
.trace{margin:10px 0 22px}
.trace table.inter{margin-bottom:6px}
.trace table.elems{font-size:11px}
.trace table.elems th,.trace table.elems td{padding:1px 3px}
.trace table.elems td{text-align:right;white-space:nowrap;font-family:ui-monospace,"DejaVu Sans Mono",monospace}
.trace table.elems .h{font-size:10px}
.trace table.elems th[scope=row]{text-align:left;white-space:nowrap}
.trace table.elems td.tie{background:var(--tie)}
.trace table.elems td.bad{outline:2px solid var(--bad);outline-offset:-2px;background:var(--bad-bg)}
.note{font-size:12px;color:var(--muted);margin:2px 0 6px}
.note .sw{margin-left:0}
.totals{display:flex;gap:14px;margin:8px 0 4px}
.totals div{border:1px solid var(--line);border-radius:6px;padding:6px 14px;min-width:110px}
.totals .v{font:700 20px ui-monospace,"DejaVu Sans Mono",monospace;display:block}
.totals .bad .v{color:var(--bad)}.totals .ok .v{color:var(--ok)}
ul.passed{list-style:none;padding:0;margin:4px 0;columns:4 240px;font-size:12.5px}
ul.passed li{font-family:ui-monospace,"DejaVu Sans Mono",monospace;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
ul.passed li::before{content:"\2713  ";color:var(--ok)}
details>summary{cursor:pointer;color:var(--muted)}
a{color:#0550ae}
tr.bad td.n:last-child{color:#8b0000;font-weight:700}
)css";

// The doctype, the escaped title and the stylesheet, inline.
inline void page_head(std::back_insert_iterator<std::string> o, std::string_view title) {
  fmt::format_to(o,
                 "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                 "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                 "<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n",
                 escape_markup(title), kPageStyle);
}

inline void page_tail(std::back_insert_iterator<std::string> o) { fmt::format_to(o, "</body>\n</html>\n"); }

}  // namespace nvfp4::reports
