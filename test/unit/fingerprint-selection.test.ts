import { describe, expect, it } from 'vitest';
import { fingerprint } from '../../packages/idem/src/core/fingerprint.js';
import {
  fingerprintCoverage,
  fingerprintedArguments,
  validateFingerprintSelection,
} from '../../packages/idem/src/core/fingerprint-selection.js';

describe('fingerprintedArguments', () => {
  const args = { workspace: 'w', title: 't', note: 'n' };

  it('is the arguments themselves without a selection (old receipts keep their fingerprints)', () => {
    expect(fingerprintedArguments(args, undefined)).toBe(args);
  });

  it('keeps the included fields that are present, and workspace always', () => {
    expect(fingerprintedArguments(args, { include: ['title', 'priority'] })).toEqual({
      workspace: 'w',
      title: 't',
    });
    expect(fingerprint(fingerprintedArguments(args, { include: ['title'] }))).toBe(
      fingerprint(fingerprintedArguments({ ...args, note: 'other' }, { include: ['title'] })),
    );
  });

  it('drops the excluded fields, never workspace, and leaves its input untouched', () => {
    expect(fingerprintedArguments(args, { exclude: ['note', 'workspace'] })).toEqual({
      workspace: 'w',
      title: 't',
    });
    expect(args).toEqual({ workspace: 'w', title: 't', note: 'n' });
  });
});

describe('fingerprintCoverage', () => {
  it('splits the fields into covered and free, in order', () => {
    const fields = ['workspace', 'title', 'priority', 'note'];
    expect(fingerprintCoverage(fields, { exclude: ['note'] })).toEqual({
      covered: ['workspace', 'title', 'priority'],
      free: ['note'],
    });
    expect(fingerprintCoverage(fields, { include: ['note'] })).toEqual({
      covered: ['workspace', 'note'],
      free: ['title', 'priority'],
    });
    expect(fingerprintCoverage(fields, undefined)).toEqual({ covered: fields, free: [] });
  });
});

describe('validateFingerprintSelection', () => {
  it('names the unknown field and the schema fields', () => {
    expect(() => validateFingerprintSelection({ include: ['titel'] }, ['workspace', 'title'])).toThrow(
      'fingerprint: include names "titel", not a top-level field of the input schema (workspace, title)',
    );
  });
});
