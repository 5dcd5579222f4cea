"""Small HTML building blocks shared by every page of the scorecard site: escaping, number cells that say
which metrics file they come from, and the page shell with its inline CSS and JS.

Why inline everything: the site must open from `file://` with the network off (no CDN, no fetch of a JSON
file, which browsers block on file:// anyway), so each page carries its own ~6 KB of CSS and JS.

Traceability: every number a page shows from a metrics file is a `<span class="num">` whose `data-src` is
`<repo-relative file>#<JSON pointer>` and whose `data-d` is the number of decimals it was formatted with;
`tests/test_site.py` resolves each one and checks the text. Numbers computed while rendering (counts of
judgments on a sample page, widths of bars) are never in a `.num` span on the benchmark pages.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

esc = html.escape


def pointer(*parts: Any) -> str:
    """A JSON pointer (RFC 6901) from path parts: ~ and / inside a key are escaped."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def resolve_pointer(doc: Any, ptr: str) -> Any:
    """The value a JSON pointer names (the inverse of `pointer`); KeyError/IndexError when it names nothing."""
    cur = doc
    if not ptr:
        return cur
    for raw in ptr.lstrip("/").split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        cur = cur[int(part)] if isinstance(cur, list) else cur[part]
    return cur


def is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and not (isinstance(v, float) and math.isnan(v))


def fmt_number(v: Any, digits: int = 3) -> str:
    """The one number format of the site (so a test can re-format the source value and compare)."""
    if not is_number(v):
        return "—"
    if digits == 0:
        return f"{round(float(v)):d}"
    return f"{float(v):.{digits}f}"


def fmt_p(v: Any) -> str:
    if not is_number(v):
        return "—"
    return "<0.001" if float(v) < 0.001 else f"{float(v):.3f}"


def num(v: Any, src: str, digits: int = 3, *, p_value: bool = False) -> str:
    """A traced number: `src` = "metrics/<b>/<R>/<file>.json#<pointer>"."""
    text = fmt_p(v) if p_value else fmt_number(v, digits)
    if not is_number(v):
        return '<span class="na">—</span>'
    kind = ' data-p="1"' if p_value else ""
    return f'<span class="num" data-src="{esc(src)}" data-d="{digits}"{kind}>{esc(text)}</span>'


def slug(text: str) -> str:
    """A file- and anchor-safe name that stays readable; distinct inputs that collide get a hash suffix."""
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "x"
    if s != text:
        import hashlib

        s = f"{s[:80]}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"
    return s


def attrs(**kw: Any) -> str:
    out = []
    for k, v in kw.items():
        if v is None or v is False:
            continue
        name = k.rstrip("_").replace("_", "-")
        out.append(f" {name}" if v is True else f' {name}="{esc(str(v))}"')
    return "".join(out)


def table(
    head: Iterable[str],
    rows: Iterable[str],
    *,
    cls: str = "sortable",
    id_: str | None = None,
    caption: str = "",
    foot: Iterable[str] = (),
) -> str:
    """`head` = ready <th> elements, `rows` = ready <tr> elements; `foot` rows stay last when the table is sorted."""
    cap = f"<caption>{caption}</caption>" if caption else ""
    tfoot = "".join(foot)
    return (
        f'<div class="tw"><table{attrs(class_=cls, id=id_)}>{cap}<thead><tr>{"".join(head)}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody>{f'<tfoot>{tfoot}</tfoot>' if tfoot else ''}</table></div>"
    )


def th(label: str, *, title: str | None = None, kind: str = "num", cls: str = "") -> str:
    """A header cell; `kind` num|text tells the sorter how to compare the column's `data-sort` values."""
    return f"<th{attrs(title=title, data_kind=kind, class_=cls or None)}>{label}</th>"


def sort_value(v: Any) -> str:
    return repr(float(v)) if is_number(v) else ""


def dl(items: Mapping[str, str]) -> str:
    """A definition list; values are ready HTML."""
    return "<dl>" + "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in items.items()) + "</dl>"


CSS = """
:root{--fg:#1b1f24;--mut:#57606a;--line:#d0d7de;--bg2:#f6f8fa;--bar:#b6d4f2;--ci:#0b3d91;--bad:#b42318;
--warn:#9a6700;--ok:#1a7f37;--hl:#fff8c5}
*{box-sizing:border-box}body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);
margin:0 auto;padding:1.2em 2em 3em;max-width:1400px}
h1{font-size:1.5em;margin:.2em 0 .4em}h2{font-size:1.2em;margin:1.6em 0 .5em;border-bottom:1px solid var(--line)}
h3{font-size:1.05em;margin:1.2em 0 .4em}a{color:#0550ae}nav.crumbs{font-size:.9em;color:var(--mut)}
.tw{overflow-x:auto;max-width:100%}table{border-collapse:collapse;margin:.3em 0 1em}
th,td{padding:4px 8px;border-bottom:1px solid var(--line);text-align:right;vertical-align:top}
th{background:var(--bg2);position:sticky;top:0;white-space:nowrap}td.s,th.s{text-align:left}
table.sortable th{cursor:pointer;user-select:none}table.sortable th[aria-sort=ascending]::after{content:" \\25B2"}
table.sortable th[aria-sort=descending]::after{content:" \\25BC"}
.cell{position:relative;min-width:92px}.cell .bar{position:absolute;left:0;top:3px;bottom:3px;background:var(--bar);
z-index:0}.cell>*:not(.bar){position:relative;z-index:1}.ci,.cnt{display:block;font-size:.78em;color:var(--mut)}
.fail{color:var(--bad);font-weight:600}.na{color:var(--mut)}.warn{background:#fff4e5;border-left:4px solid var(--warn);
padding:.5em .8em;margin:.6em 0}.note{color:var(--mut);font-size:.9em}.badge{display:inline-block;padding:0 .45em;
border-radius:9px;font-size:.8em;border:1px solid var(--line);background:var(--bg2);margin:0 .15em}
.badge.failed,.badge.bad{background:#ffebe9;border-color:#ff8182;color:var(--bad)}.badge.ok{background:#dafbe1;
border-color:#4ac26b}.sig{background:#dafbe1}dl{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em}
dt{color:var(--mut)}dd{margin:0}code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}
pre{white-space:pre-wrap;word-break:break-word;background:var(--bg2);padding:.5em;border-radius:4px;max-height:30em;
overflow:auto}details{margin:.2em 0}summary{cursor:pointer}.plots{display:flex;flex-wrap:wrap;gap:1em}
.plot{border:1px solid var(--line);border-radius:4px;padding:.4em}.plot h4{margin:0 0 .2em;font-size:.9em}
svg text{font:11px system-ui,sans-serif;fill:var(--fg)}td.hl,th.hl{background:var(--hl)}
.report{max-width:60em}.report .sec{font-weight:600;margin:1em 0 .3em}.sent{padding:1px 2px;border-radius:3px}
.sent:target,.jd:target,.src:target{background:var(--hl)}a.cite{text-decoration:none;font-weight:600}
.unres{background:#ffebe9;color:var(--bad);border-bottom:2px dotted var(--bad)}.jd{border:1px solid var(--line);
border-radius:4px;padding:.4em .6em;margin:.4em 0}.jd.failed{border-color:#ff8182;background:#fff8f7}
.filters{margin:.5em 0;display:flex;gap:.6em;flex-wrap:wrap;align-items:center}.hidden{display:none}
.badge.v-pos{background:#dafbe1;border-color:#1a7f37;color:#116329}.badge.v-neg{background:#cf222e;
border-color:#a40e26;color:#fff;font-weight:600}.badge.v-part{background:#fff1c2;border-color:#bf8700;color:#7d4e00}
.badge.v-fail{background:repeating-linear-gradient(45deg,#eaeef2,#eaeef2 4px,#fff 4px,#fff 8px);
border:1px dashed var(--bad);color:var(--bad)}.badge.v-oth{background:#ddf4ff;border-color:#54aeff;color:#0550ae}
.msg pre{max-height:20em}.msgs summary{color:var(--mut)}pre.raw{max-height:40em}
.tw table{font-size:12.5px}.tw th,.tw td{padding:3px 4px}.tw th{white-space:normal;min-width:3.2em}
#leaderboard .cell{min-width:0}#leaderboard .ci,#leaderboard .cnt{font-size:.72em;line-height:1.25}
.grid2{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,2fr);gap:1.5em}
@media (max-width:1000px){.grid2{grid-template-columns:1fr}}
"""

JS = r"""
(function(){
function val(td,kind){var v=td.getAttribute('data-sort');if(v===null)v=td.textContent.trim();
 if(kind==='text')return v.toLowerCase();if(v===''||v==='—')return null;var x=parseFloat(v);return isNaN(x)?null:x;}
function sortTable(table,col,dir){var th=table.tHead.rows[0].cells[col];var kind=th.getAttribute('data-kind')||'num';
 var body=table.tBodies[0];var rows=Array.prototype.slice.call(body.rows);
 rows.sort(function(a,b){var x=val(a.cells[col],kind),y=val(b.cells[col],kind);
  if(x===null&&y===null)return 0;if(x===null)return 1;if(y===null)return -1;  /* blanks last either way */
  var c=x<y?-1:x>y?1:0;return dir==='ascending'?c:-c;});
 rows.forEach(function(r){body.appendChild(r);});
 Array.prototype.forEach.call(table.tHead.rows[0].cells,function(c){c.removeAttribute('aria-sort');});
 th.setAttribute('aria-sort',dir);}
window.rbSort=sortTable;
document.querySelectorAll('table.sortable').forEach(function(t){if(!t.tHead)return;
 Array.prototype.forEach.call(t.tHead.rows[0].cells,function(th,i){th.addEventListener('click',function(){
  var cur=th.getAttribute('aria-sort');var kind=th.getAttribute('data-kind')||'num';
  var dir=cur?(cur==='ascending'?'descending':'ascending'):(kind==='text'?'ascending':'descending');
  sortTable(t,i,dir);});});});
document.querySelectorAll('[data-filter-for]').forEach(function(inp){
 var target=document.getElementById(inp.getAttribute('data-filter-for'));
 function apply(){var q=(document.getElementById(inp.id).value||'').toLowerCase();
  var sel=document.querySelectorAll('[data-filter-for="'+inp.getAttribute('data-filter-for')+'"]');
  var items=target.querySelectorAll('[data-filter]');items.forEach(function(it){var ok=true;
   sel.forEach(function(s){var q=(s.value||'').toLowerCase();if(!q)return;var f=s.getAttribute('data-field');
    var hay=(f?it.getAttribute('data-'+f):it.getAttribute('data-filter'))||'';
    if(s.tagName==='SELECT'?hay.toLowerCase()!==q:hay.toLowerCase().indexOf(q)<0)ok=false;});
   it.classList.toggle('hidden',!ok);});}
 inp.addEventListener('input',apply);inp.addEventListener('change',apply);});
function highlight(){var h=decodeURIComponent(location.hash||'');if(h.indexOf('#m-')!==0)return;
 var m=h.slice(3);document.querySelectorAll('td.hl,th.hl').forEach(function(e){e.classList.remove('hl');});
 document.querySelectorAll('[data-metric="'+m+'"]').forEach(function(e){e.classList.add('hl');});
 var th=document.querySelector('th[data-metric="'+m+'"]');if(th){var t=th.closest('table');
  sortTable(t,Array.prototype.indexOf.call(th.parentNode.cells,th),'ascending');}}
window.addEventListener('hashchange',highlight);highlight();
document.addEventListener('keydown',function(e){var t=e.target.tagName;
 if(t==='INPUT'||t==='SELECT'||e.ctrlKey||e.metaKey)return;
 var a=e.key==='n'?document.querySelector('a[rel=next]'):e.key==='p'?document.querySelector('a[rel=prev]'):null;
 if(a)location.href=a.getAttribute('href');});
if(/[?&]selftest(=|&|$)/.test(location.search)){var out=[],ok=true;
 function check(c,msg){if(!c){ok=false;out.push('FAIL '+msg);}else out.push('ok '+msg);}
 document.querySelectorAll('table.sortable').forEach(function(t,ti){var heads=t.tHead.rows[0].cells;
  for(var i=0;i<heads.length;i++){if(heads[i].getAttribute('data-kind')!=='num')continue;
   heads[i].click();heads[i].click();  /* first click: descending, second: ascending */
   var vs=Array.prototype.map.call(t.tBodies[0].rows,function(r){return val(r.cells[i],'num');});
   var seen=vs.filter(function(v){return v!==null;});var sorted=true;
   for(var k=1;k<seen.length;k++)if(seen[k]<seen[k-1])sorted=false;
   var blanksLast=vs.indexOf(null)<0||vs.slice(vs.indexOf(null)).every(function(v){return v===null;});
   check(sorted&&blanksLast&&heads[i].getAttribute('aria-sort')==='ascending','table '+ti+' col '+i+' sorts');}});
 var ext=[];document.querySelectorAll('[src],link[href]').forEach(function(e){
  var u=e.getAttribute('src')||e.getAttribute('href');if(/^[a-z]+:\/\//i.test(u)||u.indexOf('//')===0)ext.push(u);});
 check(ext.length===0,'no external resources '+ext.join(' '));
 var pre=document.createElement('pre');pre.id='selftest';pre.textContent=(ok?'SELFTEST PASS':'SELFTEST FAIL')+'\n'+
  out.join('\n');document.body.appendChild(pre);document.title=(ok?'SELFTEST PASS ':'SELFTEST FAIL ')+document.title;}
})();
"""


def page(title: str, body: str, *, crumbs: Iterable[tuple[str, str | None]] = ()) -> str:
    """A complete self-contained HTML document (inline CSS and JS, no external resource)."""
    nav = " / ".join(f'<a href="{esc(h)}">{esc(t)}</a>' if h else esc(t) for t, h in crumbs)
    nav_html = f'<nav class="crumbs">{nav}</nav>' if nav else ""
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>{nav_html}{body}"
        f"<script>{JS}</script></body></html>\n"
    )
