#ifndef RK_BROWSER_JS_H
#define RK_BROWSER_JS_H
/* The page-side half of engine/machine/browser.c: scripts run with Runtime.evaluate
 * in rakazo's isolated world of the page (Page.createIsolatedWorld), never
 * in the page's own: the page cannot see or change them, their globals or
 * the DOM prototypes they call (its overrides are its world's only), and it
 * never sees a ref. window.__rk there keeps the refs: a WeakMap from element
 * to ref and a Map from ref to a WeakRef, so an element keeps its ref across
 * snapshots and a removed element's ref stops resolving. No script here
 * ever gets a secret: fill_secret types it with CDP input. */

/* The element of ref REF as el (undefined when it has none). */
#define RK_BROWSER_JS_LOOKUP "const R = window.__rk; const w = R && R.byRef.get(REF); const el = w && w.deref();\n"

/* snapshot(limitBytes) -> {url, title, elements, truncated, tree} */
#define RK_BROWSER_JS_SNAPSHOT                                                                                                         \
	"((LIMIT) => {\n"                                                                                                              \
	"const R = window.__rk || (window.__rk = {next: 1, byRef: new Map(), refOf: new WeakMap()});\n"                                \
	"const lines = []; let bytes = 0, refs = 0, truncated = false;\n"                                                              \
	"const ref = el => { let r = R.refOf.get(el); if (!r) { r = 'e' + R.next++; R.refOf.set(el, r);"                               \
	" R.byRef.set(r, new WeakRef(el)); } return r; };\n"                                                                           \
	"const clip = (s, m) => { s = (s || '').replace(/\\s+/g, ' ').trim();"                                                         \
	" return s.length > m ? s.slice(0, m) + '\\u2026' : s; };\n"                                                                   \
	"const q = s => JSON.stringify(s);\n"                                                                                          \
	"const shown = el => { const v = el.ownerDocument.defaultView; const st = v.getComputedStyle(el);"                             \
	" if (st.display === 'none' || st.visibility === 'hidden') return false;"                                                      \
	" if (st.display === 'contents') return true; const r = el.getBoundingClientRect();"                                           \
	" return r.width > 0 || r.height > 0 || el.tagName === 'OPTION'; };\n"                                                         \
	"const label = el => { const a = el.getAttribute('aria-label'); if (a) return clip(a, 80);"                                    \
	" const lb = el.getAttribute('aria-labelledby'); if (lb) { const t = lb.split(/\\s+/)"                                         \
	".map(i => el.ownerDocument.getElementById(i)).filter(Boolean).map(e => e.innerText).join(' ');"                               \
	" if (t.trim()) return clip(t, 80); }"                                                                                         \
	" if (el.labels && el.labels.length) return clip([...el.labels].map(l => { const c = l.cloneNode(true);"                       \
	" c.querySelectorAll('select,input,textarea,button').forEach(x => x.remove()); return c.textContent; })"                       \
	".join(' '), 80);"                                                                                                             \
	" return clip(el.getAttribute('placeholder') || el.getAttribute('title') || el.getAttribute('alt')"                            \
	" || (el.tagName === 'INPUT' ? (['submit', 'button', 'reset'].includes(el.type) ? el.value : '')"                              \
	" : el.innerText) || el.getAttribute('name') || '', 80); };\n"                                                                 \
	"const role = el => { const r = el.getAttribute('role'); if (r) return r; const t = el.tagName;"                               \
	" if (t === 'A' && el.hasAttribute('href')) return 'link'; if (t === 'BUTTON' || t === 'SUMMARY')"                             \
	" return 'button'; if (t === 'SELECT') return el.multiple ? 'listbox' : 'combobox';"                                           \
	" if (t === 'TEXTAREA') return 'textbox'; if (t === 'IFRAME' || t === 'FRAME') return 'iframe';"                               \
	" if (t === 'INPUT') { const y = (el.type || 'text').toLowerCase(); if (y === 'hidden') return null;"                          \
	" if (['checkbox', 'radio'].includes(y)) return y; if (['submit', 'button', 'reset', 'image']"                                 \
	".includes(y)) return 'button'; if (y === 'range') return 'slider'; return 'textbox'; }"                                       \
	" if (/^H[1-6]$/.test(t)) return 'heading'; if (el.isContentEditable && el.parentElement &&"                                   \
	" !el.parentElement.isContentEditable) return 'textbox';"                                                                      \
	" if (el.hasAttribute('onclick') || el.tabIndex >= 0 && el.hasAttribute('tabindex')) return 'clickable';"                      \
	" return null; };\n"                                                                                                           \
	"const ACT = new Set(['link', 'button', 'checkbox', 'radio', 'textbox', 'combobox', 'listbox',"                                \
	" 'slider', 'clickable', 'menuitem', 'tab', 'switch', 'option', 'searchbox', 'iframe']);\n"                                    \
	"const emit = (d, s) => { if (truncated) return; bytes += s.length + 2 * d + 1;"                                               \
	" if (bytes > LIMIT) { truncated = true; return; } lines.push('  '.repeat(d) + s); };\n"                                       \
	"const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD', 'META', 'LINK', 'SVG']);\n"                          \
	"const walk = (node, d) => { let text = '';\n"                                                                                 \
	" const flush = () => { const t = clip(text, 300); if (t) emit(d, 'text ' + q(t)); text = ''; };\n"                            \
	" for (const ch of node.childNodes) { if (truncated) return;\n"                                                                \
	"  if (ch.nodeType === 3) { text += ' ' + ch.data; continue; }\n"                                                              \
	"  if (ch.nodeType !== 1 || SKIP.has(ch.tagName.toUpperCase())) continue;\n"                                                   \
	"  if (!shown(ch)) continue;\n"                                                                                                \
	"  const r = role(ch);\n"                                                                                                      \
	"  if (r === 'heading') { flush(); emit(d, 'heading ' + q(clip(ch.innerText, 120)) + ' [level=' +"                             \
	" (ch.getAttribute('aria-level') || ch.tagName.slice(1)) + ']'); continue; }\n"                                                \
	"  if (!r || !ACT.has(r)) { if (ch.ownerDocument.defaultView.getComputedStyle(ch).display !== 'inline') flush(); walk(ch, d);" \
	" continue; }\n"                                                                                                               \
	"  flush(); refs++; let s = r + ' ' + q(label(ch)) + ' [ref=' + ref(ch) + ']';\n"                                              \
	"  if (r === 'link') s += ' -> ' + clip(ch.getAttribute('href'), 120);\n"                                                      \
	"  if (r === 'textbox' || r === 'searchbox' || r === 'slider') s += ' value=' + q(clip("                                       \
	"ch.type === 'password' || (R.secret && R.secret.has(ch)) ? ((ch.isContentEditable ? ch.innerText"                             \
	" : ch.value) ? '[secret]' : '') : ch.isContentEditable ? ch.innerText : ch.value, 200));\n"                                   \
	"  if ((r === 'checkbox' || r === 'radio') && ch.checked) s += ' checked';\n"                                                  \
	"  if (r === 'combobox' || r === 'listbox') s += ' value=' + q(ch.value) + ' options=' +"                                      \
	" q([...ch.options].slice(0, 50).map(o => o.label || o.text));\n"                                                              \
	"  if (ch.disabled) s += ' disabled';\n"                                                                                       \
	"  emit(d, s);\n"                                                                                                              \
	"  if (r === 'iframe') { let doc = null; try { doc = ch.contentDocument; } catch (e) {}\n"                                     \
	"   if (doc && doc.body) walk(doc.body, d + 1); else emit(d + 1, 'text \"(another origin: not shown)\"'); }\n"                 \
	"  else if (r === 'clickable') walk(ch, d + 1);\n"                                                                             \
	" }\n"                                                                                                                         \
	" flush(); };\n"                                                                                                               \
	"if (document.body) walk(document.body, 0);\n"                                                                                 \
	"return {url: location.href, title: document.title, elements: refs, truncated,"                                                \
	" tree: lines.join('\\n')};\n"                                                                                                 \
	"})"

/* point(ref) -> {x, y, tag} in the top viewport, the element scrolled into
 * view (and each frame holding it), or {gone: true}. */
#define RK_BROWSER_JS_POINT                                                                                            \
	"((REF) => { " RK_BROWSER_JS_LOOKUP " if (!el || !el.isConnected) return {gone: true};\n"                      \
	" el.scrollIntoView({block: 'center', inline: 'center', behavior: 'instant'});\n"                              \
	" for (let v = el.ownerDocument.defaultView; v !== window && v.frameElement; v = v.parent)"                    \
	" v.frameElement.scrollIntoView({block: 'center', inline: 'center', behavior: 'instant'});\n"                  \
	" const r = el.getBoundingClientRect(); let x = r.left + r.width / 2, y = r.top + r.height / 2;\n"             \
	" for (let v = el.ownerDocument.defaultView; v !== window && v.frameElement; v = v.parent) {"                  \
	" const f = v.frameElement.getBoundingClientRect(); x += f.left + v.frameElement.clientLeft;"                  \
	" y += f.top + v.frameElement.clientTop; }\n"                                                                  \
	" return {x, y, tag: el.tagName.toLowerCase(), disabled: !!el.disabled}; })"

/* focus(ref, clear) -> {ok} | {gone}: focuses and selects what a typed text replaces. */
#define RK_BROWSER_JS_FOCUS                                                                                            \
	"((REF, CLEAR) => { " RK_BROWSER_JS_LOOKUP " if (!el || !el.isConnected) return {gone: true};\n"               \
	" el.scrollIntoView({block: 'center', behavior: 'instant'}); el.focus();\n"                                    \
	" if (CLEAR) { if (typeof el.select === 'function' && 'value' in el) el.select();"                             \
	" else if (el.isContentEditable) { const s = el.ownerDocument.getSelection(); const g ="                       \
	" el.ownerDocument.createRange(); g.selectNodeContents(el); s.removeAllRanges(); s.addRange(g); } }\n"         \
	" const a = el.ownerDocument.activeElement; return {ok: a === el || el.contains(a),"                           \
	" editable: 'value' in el || el.isContentEditable}; })"

/* choose(ref, value) -> {value} | {gone} | {options}: picks a select's option by value or label. */
#define RK_BROWSER_JS_SELECT                                                                                           \
	"((REF, V) => { " RK_BROWSER_JS_LOOKUP " if (!el || !el.isConnected) return {gone: true};\n"                   \
	" if (el.tagName !== 'SELECT') return {notSelect: el.tagName.toLowerCase()};\n"                                \
	" const o = [...el.options].find(o => o.value === V) || [...el.options].find(o => (o.label ||"                 \
	" o.text).trim() === V);\n"                                                                                    \
	" if (!o) return {options: [...el.options].map(o => o.label || o.text)};\n"                                    \
	" el.value = o.value; o.selected = true;\n"                                                                    \
	" el.dispatchEvent(new Event('input', {bubbles: true}));"                                                      \
	" el.dispatchEvent(new Event('change', {bubbles: true}));\n"                                                   \
	" return {value: el.value}; })"

/* fill_focus(ref) -> {ok} | {gone} | {field: false}: focuses a text field
 * for fill_secret and selects what the typed secret replaces; the field is
 * then shown as [secret] in snapshots. Types nothing. */
#define RK_BROWSER_JS_FILL_FOCUS                                                                                       \
	"((REF) => { " RK_BROWSER_JS_LOOKUP " if (!el || !el.isConnected) return {gone: true};\n"                      \
	" const t = el.tagName; const field = t === 'TEXTAREA' || el.isContentEditable || (t === 'INPUT' &&"           \
	" !['checkbox', 'radio', 'submit', 'button', 'reset', 'image', 'file', 'hidden', 'range', 'color']"            \
	".includes((el.type || 'text').toLowerCase()));\n"                                                             \
	" if (!field || el.disabled || el.readOnly) return {field: false};\n"                                          \
	" el.scrollIntoView({block: 'center', behavior: 'instant'}); el.focus();\n"                                    \
	" (R.secret || (R.secret = new WeakSet())).add(el);\n"                                                         \
	" if (el.isContentEditable) { const d = el.ownerDocument; const s = d.getSelection();"                         \
	" const g = d.createRange(); g.selectNodeContents(el); s.removeAllRanges(); s.addRange(g); }"                  \
	" else el.select();\n"                                                                                         \
	" return {ok: true}; })"

/* frame_of(ref) -> the frame element holding ref's document (a remote
 * object: engine/machine/browser.c asks the browser for its frame id), null for
 * the top document, undefined when ref is gone. */
#define RK_BROWSER_JS_FRAME_OF                                                                                         \
	"((REF) => { " RK_BROWSER_JS_LOOKUP                                                                            \
	" if (!el || !el.isConnected) return undefined; const v = el.ownerDocument.defaultView;\n"                     \
	" return v === window ? null : v ? v.frameElement : undefined; })"

/* focused(ref) -> {ok} | {gone} | {frame: src} | {elsewhere: tag}: whether
 * the focus, followed from the top document down through the frames, ends
 * on ref. A frame of another origin (its document out of reach) holding the
 * focus is {frame}. */
#define RK_BROWSER_JS_FOCUSED                                                                                          \
	"((REF) => { " RK_BROWSER_JS_LOOKUP " if (!el || !el.isConnected) return {gone: true};\n"                      \
	" for (let a = document.activeElement;;) { if (a === el) return {ok: true};\n"                                 \
	"  if (!a || !['IFRAME', 'FRAME', 'OBJECT', 'EMBED'].includes(a.tagName))"                                     \
	" return {elsewhere: a ? a.tagName.toLowerCase() : 'nothing'};\n"                                              \
	"  let d = null; try { d = a.contentDocument; } catch (e) {}\n"                                                \
	"  if (!d) return {frame: String(a.src || a.data || a.tagName.toLowerCase())};\n"                              \
	"  a = d.activeElement; } })"

#define RK_BROWSER_JS_STATE "({url: location.href, title: document.title, ready: document.readyState})"
#define RK_BROWSER_JS_VIEWPORT "({x: innerWidth / 2, y: innerHeight / 2})"
#endif
