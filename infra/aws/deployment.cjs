// osls resolves `${file(infra/aws/deployment.cjs):lifecycle}` (and `:environment.*`, `:tracingMode`,
// `:jwtIssuer`, `:resources`…) by calling this function with its resolveVariable; the built renderer
// (dist/sls-deployment.mjs, from scripts/sls-deployment.ts, built by `npm run package`) reads the
// deployment parameters, refuses a missing, placeholder or invalid one naming it, and renders the
// bucket's rules from lib/lifecycle and the guard rails from scripts/deployment-guards.ts.
module.exports = async ({ resolveVariable }) => {
  const { awsDeployment } = await import('../../dist/sls-deployment.mjs');
  try {
    return await awsDeployment(resolveVariable);
  } catch (error) {
    // osls would print the refusal once per variable that reads this file, each inside its own
    // "Cannot resolve variable" sentence: one line naming the parameter is the whole answer.
    if (error && error.name === 'DeploymentParameterError') {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
};
