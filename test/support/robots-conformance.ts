// The robots.txt conformance cases (test/fixtures/robots-conformance.json),
// typed: the parser's unit tests and the `crawler robots check` tests run the
// same cases.
import fixtures from '../fixtures/robots-conformance.json';

export interface ConformanceCase {
  name: string;
  robots: string;
  agent: string;
  checks: [string, 'allowed' | 'disallowed'][];
  crawlDelay?: string;
}

export const conformanceCases = fixtures as ConformanceCase[];
