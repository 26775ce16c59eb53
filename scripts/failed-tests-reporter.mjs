// A test reporter that keeps only the failures (todo tests excluded), so the runner can repeat them, with file
// and error, after the summary: in a long CI log the one failing test is otherwise a needle among 1,500 passes.
export default async function* failedTests(source) {
  const failed = [];
  for await (const event of source) {
    if (event.type !== 'test:fail' || event.data.todo || event.data.skip) continue;
    const { name, file, line, details } = event.data;
    // A suite or file that fails only because a test inside it failed adds nothing to the list.
    if (details?.error?.failureType === 'subtestsFailed') continue;
    const cause = details?.error?.cause ?? details?.error;
    const message = String(cause?.message ?? cause ?? '').split('\n').slice(0, 6).join('\n    ');
    failed.push(`- ${name}\n    ${file ?? '?'}${line ? `:${line}` : ''}\n    ${message}`);
  }
  yield failed.length === 0 ? '' : `${failed.join('\n')}\n`;
}
