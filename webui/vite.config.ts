import { defineConfig } from "vite";
import preact from "@preact/preset-vite";

// Served by the master under /det/ (Determined's URL scheme); output ships in the Python package.
export default defineConfig({
  base: "/det/",
  plugins: [preact()],
  build: {
    outDir: "../controlplane/webui_dist",
    emptyOutDir: true,
    target: "es2020",
    sourcemap: false,
  },
});
