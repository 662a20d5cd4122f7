// osls resolves `${file(infra/aws/deployment.cjs):lifecycle}` (and `:environment.*`, `:tracingMode`)
// by calling this function with its resolveVariable; the built renderer (dist/sls-deployment.mjs,
// from scripts/sls-deployment.ts, built by `npm run package`) reads the deployment parameters,
// refuses invalid combinations naming the parameter, and renders the bucket's rules from lib/lifecycle.
module.exports = async ({ resolveVariable }) => {
  const { awsDeployment } = await import('../../dist/sls-deployment.mjs');
  try {
    return await awsDeployment(resolveVariable);
  } catch (error) {
    // osls prints the stack of every variable that failed: one line each is enough.
    if (error && error.name === 'DeploymentParameterError') error.stack = error.message;
    throw error;
  }
};
