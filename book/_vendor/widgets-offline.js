// Lets saved ipywidgets state render offline, from book/_vendor (not a CDN),
// on pages that also use MathJax 3. Loaded after require.js, before embed-amd.js
// (nb_ipywidgets_js in _config.yml). Hand-written; not touched by scripts/vendor_js.sh.
(function () {
  "use strict";
  // 1. embed-amd.js finds its fonts and chunks relative to its AMD module URI.
  //    Without this it would look under <page dir>/@jupyter-widgets/...
  var here = document.currentScript && document.currentScript.src;
  if (here && window.require && window.require.config) {
    var base = here.slice(0, here.lastIndexOf("/") + 1);
    window.require.config({
      paths: { "@jupyter-widgets/html-manager/dist": base + "html-manager/dist" }
    });
  }

  // 2. html-manager 1.0.6 typesets widget labels with the MathJax 2 API
  //    (MathJax.Hub.Queue), which MathJax 3 lacks: every widget with a
  //    description would throw. Give MathJax 3 a tiny Hub.Queue that calls
  //    typesetPromise, installed whenever MathJax (re)defines window.MathJax.
  function patch(mj) {
    if (!mj || typeof mj !== "object" || mj.Hub || !mj.version) return;
    mj.Hub = {
      Queue: function () {
        Array.prototype.forEach.call(arguments, function (job) {
          if (!Array.isArray(job) || job[0] !== "Typeset") return;
          var el = job[2];
          var ready = mj.startup && mj.startup.promise ? mj.startup.promise : Promise.resolve();
          ready.then(function () {
            if (mj.typesetPromise) return mj.typesetPromise(el ? [el] : undefined);
          }).catch(function (err) { console.error("MathJax typeset of a widget failed:", err); });
        });
      }
    };
  }
  var current = window.MathJax;
  patch(current);
  try {
    Object.defineProperty(window, "MathJax", {
      configurable: true,
      enumerable: true,
      get: function () { return current; },
      set: function (value) { current = value; patch(value); }
    });
  } catch (e) { /* already non-configurable: leave it */ }
})();
