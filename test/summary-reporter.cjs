// The one closing line CI reads: `tests: N passed, N failed`, written as the process exits so it
// comes after jest's own summary. A test file that could not run at all counts as a failure too.
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    process.once('exit', () => process.stderr.write(`tests: ${results.numPassedTests} passed, ${failed} failed\n`));
  }
}
module.exports = SummaryReporter;
