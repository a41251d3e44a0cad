import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, cleanup, makeTempDir } from '../helpers/mcp-fixtures.js';
import { check, reportOf, rowsOf, toolOf, verdictsOf } from './run-check.js';

// Published MCP servers nobody here wrote, installed as devDependencies at pinned versions. Each runs
// over stdio from node_modules; whatever they store goes to a temp dir (no network: server-everything's
// gzip tool gets a data: URI instead of its default https URL).
const bin = (name: string) => join(REPO_ROOT, 'node_modules', name, 'dist', 'index.js');
const MEMORY = bin('@modelcontextprotocol/server-memory');
const EVERYTHING = bin('@modelcontextprotocol/server-everything');
const FILESYSTEM = bin('@modelcontextprotocol/server-filesystem');
const TASKS = bin('@kazuph/mcp-taskmanager');

let dir: string;
beforeAll(() => {
  dir = makeTempDir('idem-check-published-');
});
afterAll(cleanup);

describe('@modelcontextprotocol/server-memory, zero-config', () => {
  it('fails create_entities (no key; a retry answers without the first result), counts effects with read_graph', async () => {
    const memory = ['--', 'env', `MEMORY_FILE_PATH=${join(dir, 'memory.jsonl')}`, process.execPath, MEMORY];
    const result = await check(['--json', ...memory]);
    expect(result.exitCode).toBe(1);
    const report = reportOf(result);
    expect(report.tools.map((t) => t.tool)).toEqual([
      'create_entities',
      'create_relations',
      'add_observations',
      'delete_entities',
      'delete_observations',
      'delete_relations',
    ]);
    expect(report.notChecked.map((n) => n.tool)).toEqual(['read_graph', 'search_nodes', 'open_nodes']);

    // create_entities: no key argument; the entity's name (an echo of the arguments) is its only id.
    const entities = toolOf(result, 'create_entities');
    expect(entities).toMatchObject({
      key: null,
      count: { tool: 'read_graph', path: '$.entities', perAction: 1, from: 'found' },
      arguments: {
        entities: [
          {
            name: 'idem check {{unique}}',
            entityType: 'idem check {{unique}}',
            observations: ['idem check {{unique}}'],
          },
        ],
      },
    });
    const rows = rowsOf(result, 'create_entities');
    expect(rows.key_argument).toMatchObject({
      result: 'fail',
      summary:
        'no idempotency key argument: every retry is a new action ' +
        '(annotated neither readOnlyHint nor idempotentHint; pass --key-field NAME if it has one)',
    });
    // The retry creates nothing more (the server skips an existing name) but answers an empty list.
    expect(rows.lost_response?.result).toBe('fail');
    expect(rows.lost_response?.summary).toMatch(
      /^without a key: the retry's answer lacks the first result \(idem check [0-9a-f]{12}\): dropped idem check [0-9a-f]{12}, retry \(no id\), effects \+1$/,
    );
    // Concurrent creates race in the server's load-then-save of its file, in some rounds only: the
    // verdict may go either way, but it rests on counted effects, never on luck or on nothing.
    expect(['pass', 'fail']).toContain(rows.concurrent_duplicates?.result);
    expect(verdictsOf(result, 'create_entities').slice(3)).toEqual([
      ['conflicting_arguments', 'skip'],
      ['fresh_key', 'skip'],
      ['cross_principal', 'skip'],
    ]);

    // create_relations has no id at all, but read_graph counts its effects: a retry adds nothing.
    expect(toolOf(result, 'create_relations').count).toMatchObject({
      tool: 'read_graph',
      path: '$.relations',
    });
    expect(rowsOf(result, 'create_relations').lost_response).toMatchObject({
      result: 'pass',
      summary: "without a key: one action's effect (+1): dropped (no id), retry (no id), effects +1",
    });

    // add_observations needs an existing entity: the server refuses the sample, and the row says so.
    expect(verdictsOf(result, 'add_observations')).toEqual([
      ['key_argument', 'fail'],
      ['sample_arguments', 'inconclusive'],
    ]);
    expect(rowsOf(result, 'add_observations').sample_arguments?.summary).toMatch(
      /^the server refused the sample arguments \(tool_error: Entity with name idem check [0-9a-f]{12} not found\)/,
    );

    // The delete tools are annotated idempotentHint: no key needed, but nothing shows their effects.
    for (const tool of ['delete_entities', 'delete_observations', 'delete_relations']) {
      expect(verdictsOf(result, tool)).toEqual([
        ['key_argument', 'skip'],
        ['lost_response', 'inconclusive'],
        ['concurrent_duplicates', 'inconclusive'],
        ['conflicting_arguments', 'skip'],
        ['fresh_key', 'skip'],
        ['cross_principal', 'skip'],
      ]);
    }
  }, 60_000);
});

describe('@modelcontextprotocol/server-everything, zero-config', () => {
  it('finds resource_link ids, fails the key-less toggles, and says why the rest cannot be judged', async () => {
    const result = await check([
      '--arg',
      'data=data:text/plain,idem-{{unique}}',
      '--arg',
      'name=idem-check.gz',
      '--json',
      '--',
      process.execPath,
      EVERYTHING,
      'stdio',
    ]);
    expect(result.exitCode).toBe(1);
    expect(reportOf(result).tools.map((t) => t.tool)).toEqual([
      'gzip-file-as-resource',
      'toggle-simulated-logging',
      'toggle-subscriber-updates',
      'simulate-research-query',
    ]);
    // gzip-file-as-resource answers a resource_link to demo://resource/session/<name>: the same for a retry.
    expect(verdictsOf(result, 'gzip-file-as-resource')).toEqual([
      ['key_argument', 'skip'],
      ['lost_response', 'pass'],
      ['concurrent_duplicates', 'pass'],
      ['conflicting_arguments', 'skip'],
      ['fresh_key', 'skip'],
      ['cross_principal', 'skip'],
    ]);
    expect(rowsOf(result, 'gzip-file-as-resource').lost_response?.evidence).toMatchObject({
      dropped: { id: { value: 'demo://resource/session/idem-check.gz', at: 'resource_link', echo: false } },
      retry: { id: { value: 'demo://resource/session/idem-check.gz' } },
    });
    for (const tool of ['toggle-simulated-logging', 'toggle-subscriber-updates']) {
      expect(verdictsOf(result, tool).slice(0, 3)).toEqual([
        ['key_argument', 'fail'],
        ['lost_response', 'inconclusive'],
        ['concurrent_duplicates', 'inconclusive'],
      ]);
      expect(toolOf(result, tool).notes).toContain(
        'no argument can vary per action (no string argument takes {{unique}})',
      );
    }
    // The SDK v2 client refuses a tool that requires task augmentation before sending it.
    expect(rowsOf(result, 'simulate-research-query').sample_arguments).toMatchObject({
      result: 'inconclusive',
      summary: expect.stringMatching(
        /^the server refused the sample arguments \(tool_error: .*requires task augmentation/,
      ),
    });
  }, 60_000);
});

describe('@modelcontextprotocol/server-filesystem', () => {
  it('zero-config: write_file is annotated idempotent but nothing counts it; edit_file refuses the sample', async () => {
    const root = join(dir, 'fs-zero');
    mkdirSync(root);
    const result = await check(['--json', '--', process.execPath, FILESYSTEM, root]);
    expect(result.exitCode).toBe(1);
    expect(verdictsOf(result, 'write_file').slice(0, 3)).toEqual([
      ['key_argument', 'skip'],
      ['lost_response', 'inconclusive'],
      ['concurrent_duplicates', 'inconclusive'],
    ]);
    expect(verdictsOf(result, 'edit_file')).toEqual([
      ['key_argument', 'fail'],
      ['sample_arguments', 'inconclusive'],
    ]);
  }, 60_000);

  it('with a --config (a path per action, list_directory as the count): write_file passes on counted effects', async () => {
    const root = join(dir, 'fs-config');
    mkdirSync(root);
    const config = join(dir, 'fs.json');
    writeFileSync(
      config,
      JSON.stringify({
        tools: {
          write_file: {
            arguments: { path: join(root, 'idem-{{unique}}.txt') },
            count: { tool: 'list_directory', arguments: { path: root } },
          },
        },
      }),
    );
    const result = await check(['--config', config, '--json', '--', process.execPath, FILESYSTEM, root]);
    expect(result.exitCode).toBe(0);
    expect(toolOf(result, 'write_file').count).toMatchObject({
      tool: 'list_directory',
      path: '$.content',
      unit: 'lines',
      perAction: 1,
      from: 'config',
    });
    expect(verdictsOf(result, 'write_file')).toEqual([
      ['key_argument', 'skip'],
      ['lost_response', 'pass'],
      ['concurrent_duplicates', 'pass'],
      ['conflicting_arguments', 'skip'],
      ['fresh_key', 'skip'],
      ['cross_principal', 'skip'],
    ]);
    // One file per intended action: the first call, the lost-response action, one per round.
    expect(readdirSync(root)).toHaveLength(1 + 1 + 20);
  }, 60_000);
});

describe('@kazuph/mcp-taskmanager', () => {
  it('request_planning makes a second request on a retry (server-made ids compared)', async () => {
    const tasks = ['--', 'env', `TASK_MANAGER_FILE_PATH=${join(dir, 'tasks.json')}`, process.execPath, TASKS];
    const result = await check(['--tool', 'request_planning', '--json', ...tasks]);
    expect(result.exitCode).toBe(1);
    const verdicts = verdictsOf(result, 'request_planning');
    expect(verdicts.slice(0, 2)).toEqual([
      ['key_argument', 'fail'],
      ['lost_response', 'fail'],
    ]);
    // Concurrent calls each load the file, count its requests and save: they may all get the same
    // counter-made ids (and one saved request) or not, by timing. The row judges on those ids.
    expect(['pass', 'fail']).toContain(verdicts[2]?.[1]);
    expect(rowsOf(result, 'request_planning').lost_response?.summary).toMatch(
      /^without a key: the retry made a second resource \(\$\.tasks\[0\]\.id: task-\d+, then task-\d+\)/,
    );
    // Its other tools need a request that exists; unannotated, each lacks a key.
    const all = await check(['--json', ...tasks]);
    expect(verdictsOf(all, 'get_next_task')).toEqual([
      ['key_argument', 'fail'],
      ['sample_arguments', 'skip'],
    ]);
    expect(rowsOf(all, 'mark_task_done').sample_arguments?.summary).toBe(
      'not run: needs the id of something that exists: requestId, taskId (pass --arg requestId=VALUE --arg taskId=VALUE)',
    );
  }, 60_000);
});
