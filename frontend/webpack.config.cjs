// Merged into JupyterLab's webpack configuration by `jupyter-builder build` (package.json's
// jupyterlab.webpackConfig).
//
// Module ids from the modules' order, not hashes of their identifiers: webpack's default
// ("deterministic") hashes the container entry's identifier, which holds the absolute path of
// lib/index.js, so the same sources built in another folder gave another remoteEntry file.
module.exports = {
  optimization: { moduleIds: "natural" },
};
