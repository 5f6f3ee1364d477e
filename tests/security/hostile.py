"""Hostile text a model, a runner or a scorer could return: each entry is (name, payload).

Every report format must carry these as inert text. The page must not run them, the XML
must stay valid, the Markdown must not turn them into HTML, the terminal must not obey
their escapes and GitHub must not read them as workflow commands.
"""
from __future__ import annotations

C0 = "".join(chr(c) for c in range(0x20) if c not in (0x09, 0x0A, 0x0D))
C1 = "".join(chr(c) for c in range(0x80, 0xA0))
BIG = 10 * 1024 * 1024  # characters of the one very large payload

PAYLOADS: list[tuple[str, str]] = [
    ("script", "<script>window.__pwned=1;alert(1)</script>"),
    ("img-onerror", '<img src=x onerror="window.__pwned=1;alert(1)">'),
    ("end-script", "</script><script>window.__pwned=1;alert(1)</script>"),
    ("comment-open", "<!-- an unclosed comment <script>window.__pwned=1</script>"),
    ("comment-close", "--> after a comment close <script>window.__pwned=1</script>"),
    ("line-separators", "before\u2028between\u2029after"),
    ("javascript-url", '<a href="javascript:window.__pwned=1;alert(1)">click me</a> javascript:alert(1)'),
    ("svg-onload", '<svg xmlns="http://www.w3.org/2000/svg" onload="window.__pwned=1;alert(1)"><circle r="5"/></svg>'),
    ("style-break", '</style><style>body{background:url(http://127.0.0.1:9/css)}</style>'),
    ("css-url", "x{}*{background-image:url('http://127.0.0.1:9/bg.png')} @import url(http://127.0.0.1:9/i.css);"),
    ("meta-refresh", '<meta http-equiv="refresh" content="0;url=http://127.0.0.1:9/refresh">'),
    ("iframe", '<iframe src="http://127.0.0.1:9/frame" srcdoc="<script>parent.__pwned=1</script>"></iframe>'),
    ("base-href", '<base href="http://127.0.0.1:9/"><a href="x">relative</a>'),
    ("form-action", '<form action="http://127.0.0.1:9/f"><button formaction="javascript:alert(1)">go</button></form>'),
    ("template-literal", "${alert(1)}`;alert(1);`{{7*7}}"),
    ("c0-controls", "C0[" + C0 + "]DEL[\x7f]"),
    ("c1-controls", "C1[" + C1 + "]"),
    ("nul", "before\x00after"),
    ("rtl-override", "invoice\u202egpj.exe and \u2066isolate\u2069 \u200fmark"),
    ("ansi-colour", "\x1b[31mred\x1b[0m \x1b[2J\x1b[H cleared screen \x1b[1A\x1b[2K"),
    ("osc-hyperlink", "\x1b]8;;http://127.0.0.1:9/x\x07click\x1b]8;;\x07 \x1b]0;new title\x07"),
    ("carriage-return", "all tests passed\rFAILED: secret overwritten"),
    ("error-command", "::error::injected error"),
    ("set-output", "::set-output name=pwned::1"),
    ("add-mask", "::add-mask::everything"),
    ("encoded-newline", "harmless%0A::warning::injected via percent"),
    ("stop-commands", "line one\n::stop-commands::token123\n::error::after stop"),
    ("newline-command", "ok\n::error file=x.py,line=1::injected\r\n::notice::also"),
    ("details", "<details open><summary>click</summary><img src=x onerror=alert(1)></details>"),
    ("markdown-img", '![x](http://127.0.0.1:9/track.png) <img src="http://127.0.0.1:9/t.png">'),
    ("markdown-link", "[click](javascript:alert(1)) [y](http://127.0.0.1:9/) <http://127.0.0.1:9/auto>"),
    ("table-breaker", "a | b | c\n|---|---|\n| injected | row |"),
    ("backticks", "``` \ncode block\n``` and `inline` and ~~~"),
    ("heading", "# Heading\n## Sub\n> quote\n- list\n***"),
    ("entities", "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &#x3C;b&#x3E;"),
    ("cdata-end", "]]> <![CDATA[ x ]]> <?xml version='1.0'?>"),
    ("xml-quote", "\"' & < > attribute \" breaker='1'"),
    ("lone-surrogate", "before\ud800after\udfff"),
    ("astral", "emoji 😀 and 𝕏 math"),
    ("big", "A" * 1000 + "<script>window.__pwned=1</script>" + "B" * (BIG - 1034)),
]

# A dataset that fails with this stops the run; the command line prints why.
ABORT = "source failed\n::error::injected by a dataset\n\x1b[2J\x1b]0;title\x07 \u202eevil\r::warning::cr"

NAMES = [name for name, _ in PAYLOADS]
BY_NAME = dict(PAYLOADS)
SHORT = [(name, text) for name, text in PAYLOADS if len(text) < 1000]

# Fragments whose presence as markup (not as escaped text) means a payload got through.
MARKUP = ("<script", "<img", "<svg", "<iframe", "<meta", "<base", "<style", "</style", "<details",
          "<form", "<a ", "</script", "<!--")
