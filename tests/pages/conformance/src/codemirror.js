// CodeMirror 6 with its basic setup and JavaScript, as its docs show; bundled at install
// by build.mjs.
import { EditorView, basicSetup } from "codemirror";
import { javascript } from "@codemirror/lang-javascript";

window.view = new EditorView({
  doc: "function hello() {\n  return 1;\n}\n",
  extensions: [basicSetup, javascript()],
  parent: document.getElementById("editor"),
});
