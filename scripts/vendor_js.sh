#!/usr/bin/env bash
# Regenerate book/_vendor/ from npm: the JavaScript the built HTML needs to
# render math and saved widget state with no network (MathJax 3, RequireJS,
# the Jupyter widgets HTML manager, and Vega/Vega-Lite/vega-embed, which draw the
# explorers from their precomputed states). Only the files loaded at runtime are kept.
# Usage: scripts/vendor_js.sh   (needs npm; run from anywhere)
set -euo pipefail

MATHJAX=mathjax@3
REQUIREJS=requirejs@2.3.7
HTMLMANAGER=@jupyter-widgets/html-manager@1.0.6
VEGA=vega@6.4.0
VEGALITE=vega-lite@6.4.0
VEGAEMBED=vega-embed@7.3.0

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$root/book/_vendor"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

cd "$tmp"
npm pack --silent "$MATHJAX" "$REQUIREJS" "$HTMLMANAGER" "$VEGA" "$VEGALITE" "$VEGAEMBED" > packed.txt
for tgz in $(cat packed.txt); do
    mkdir -p "x/${tgz%.tgz}"
    tar xzf "$tgz" -C "x/${tgz%.tgz}"
done
mj="$(echo x/mathjax-*/package)"
rq="$(echo x/requirejs-*/package)"
hm="$(echo x/jupyter-widgets-html-manager-*/package)"
vg="$(echo x/vega-[0-9]*/package)"
vl="$(echo x/vega-lite-*/package)"
ve="$(echo x/vega-embed-*/package)"

# Only the npm-derived folders are regenerated; hand-written files in $dest
# (widgets-offline.js) are kept.
rm -rf "$dest/mathjax" "$dest/requirejs" "$dest/html-manager" "$dest/vega" "$dest/README.md"
mkdir -p "$dest/mathjax/es5/output/chtml/fonts" "$dest/mathjax/es5/input/tex" \
         "$dest/requirejs" "$dest/html-manager/dist" "$dest/vega"

# MathJax: the combined component, its CHTML web fonts, and the TeX
# extensions that `autoload`/`require` fetch on demand (\boldsymbol, \cancel, ...).
cp "$mj/es5/tex-mml-chtml.js" "$dest/mathjax/es5/"
cp -r "$mj/es5/output/chtml/fonts/woff-v2" "$dest/mathjax/es5/output/chtml/fonts/"
cp -r "$mj/es5/input/tex/extensions" "$dest/mathjax/es5/input/tex/"
cp "$mj/LICENSE" "$mj/package.json" "$dest/mathjax/"

# RequireJS: the AMD loader embed-amd.js registers itself with.
cp "$rq/require.js" "$rq/package.json" "$dest/requirejs/"
cp "$rq/LICENSE" "$dest/requirejs/" 2>/dev/null || true

# html-manager: the AMD bundle (self-contained: base, controls, output) and the
# Font Awesome fonts its CSS references (woff2/woff are all a browser fetches).
cp "$hm/dist/embed-amd.js" "$hm/dist/embed.js.LICENSE.txt" "$dest/html-manager/dist/"
cp "$hm"/dist/*.woff2 "$hm"/dist/*.woff "$dest/html-manager/dist/"
cp "$hm/package.json" "$dest/html-manager/"
cp "$hm/LICENSE" "$dest/html-manager/" 2>/dev/null || true

# Vega, Vega-Lite, vega-embed: the UMD builds. tfx_offline.py loads them (in this
# order, before RequireJS, so they become globals) on pages with an explorer.
for p in "$vg" "$vl" "$ve"; do
    name="$(node -p 'require(process.argv[1]).name' "$PWD/$p/package.json")"
    cp "$p/build/$name.min.js" "$dest/vega/"
    cp "$p/LICENSE" "$dest/vega/$name.LICENSE"
done

cat > "$dest/README.md" <<TXT
Vendored from npm by scripts/vendor_js.sh (do not edit by hand):
$(for p in "$mj" "$rq" "$hm" "$vg" "$vl" "$ve"; do node -p 'const d=require(process.argv[1]); `- ${d.name}@${d.version} (${d.license})`' "$PWD/$p/package.json"; done)

Sphinx copies this folder into _build/html/_static/ (html_static_path in
_config.yml); mathjax_path and nb_ipywidgets_js point at the files here, and
book/_ext/tfx_offline.py adds vega/*.min.js to the pages that hold an explorer.
widgets-offline.js is hand-written (not from npm): it points RequireJS at
html-manager/dist and gives MathJax 3 the MathJax.Hub.Queue that html-manager
1.0.6 calls. It is deliberately not book/_static: Jupyter Book 1 would inject every .js
file found there into every page.
TXT
du -sh "$dest"
