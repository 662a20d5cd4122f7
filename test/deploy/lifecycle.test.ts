/** lib/lifecycle: one config, rendered for S3 and OSS, equal to the deployed templates, applied as rendered. */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import OSS from 'ali-oss';
import yaml from 'js-yaml';
import { describe, expect, inject, it } from 'vitest';
import { createS3Client } from '../../lib/drivers/s3.js';
import { applyOssLifecycle, applyS3Lifecycle } from '../../lib/lifecycle/apply.js';
import { LifecycleConfigError, lifecycleRules, renderOss, renderS3 } from '../../lib/lifecycle/index.js';
import { writeRosBlocks } from '../../scripts/ros-template.js';
import { OSS_CREDENTIALS } from '../servers/global-setup.js';
import { xmlValues } from '../servers/http-util.js';

describe('lifecycle rules', () => {
  it('select by kind tag: markers expire first, state later, archives and workspaces on their own schedule', () => {
    const s3 = renderS3(lifecycleRules('s3', { retentionDays: 14 }));
    const byId = Object.fromEntries(s3.Rules.map((r) => [r.ID, r]));
    expect(byId['session-markers']).toMatchObject({
      Filter: { And: { Tags: [{ Key: 'kind', Value: 'marker' }] } },
      Expiration: { Days: 14 },
    });
    expect(byId['session-state']?.Expiration?.Days).toBe(16);
    expect(byId.archives).toMatchObject({
      Transitions: [{ Days: 30, StorageClass: 'GLACIER_IR' }],
      Expiration: { Days: 365 },
    });
    expect(byId.workspaces?.Filter).toEqual({
      And: { Prefix: 'agent-state/', Tags: [{ Key: 'kind', Value: 'workspace' }] },
    });
    // Packs never expire by age: only those the sweep tagged gc=1 too, after the grace.
    expect(byId['workspace-packs-gc']).toEqual({
      ID: 'workspace-packs-gc',
      Status: 'Enabled',
      Filter: {
        And: {
          Prefix: 'agent-state/',
          Tags: [
            { Key: 'kind', Value: 'pack' },
            { Key: 'gc', Value: '1' },
          ],
        },
      },
      Expiration: { Days: 7 },
    });
    expect(s3.Rules.filter((r) => JSON.stringify(r.Filter).includes('"pack"'))).toHaveLength(1);
    expect(
      renderOss(lifecycleRules('oss', { packGraceDays: 3 })).find((r) => r.id === 'workspace-packs-gc'),
    ).toMatchObject({
      tag: [
        { key: 'kind', value: 'pack' },
        { key: 'gc', value: '1' },
      ],
      expiration: { days: 3 },
    });
    expect(byId['abort-incomplete-uploads']).toMatchObject({
      Filter: { Prefix: 'agent-state/' },
      AbortIncompleteMultipartUpload: { DaysAfterInitiation: 7 },
    });
    const oss = renderOss(lifecycleRules('oss', { archiveStorageClass: 'ColdArchive' }));
    expect(oss.find((r) => r.id === 'archives')).toMatchObject({
      tag: [{ key: 'kind', value: 'archive' }],
      transition: { storageClass: 'ColdArchive' },
    });
  });

  it('refuses what the providers refuse, naming the setting', () => {
    const refused = (fn: () => unknown, setting: string) => {
      const error = (() => {
        try {
          fn();
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(LifecycleConfigError);
      expect((error as LifecycleConfigError).setting).toBe(setting);
    };
    refused(
      () => lifecycleRules('s3', { archiveStorageClass: 'STANDARD_IA', archiveTransitionDays: 10 }),
      'archiveStorageClass',
    );
    refused(() => lifecycleRules('s3', { archiveStorageClass: 'Archive' }), 'archiveStorageClass');
    refused(() => lifecycleRules('oss', { workspaceStorageClass: 'GLACIER' }), 'workspaceStorageClass');
    refused(
      () => lifecycleRules('oss', { archiveTransitionDays: 400, archiveRetentionDays: 365 }),
      'archiveStorageClass',
    );
    refused(() => lifecycleRules('s3', { retentionDays: 0 }), 'retentionDays');
    refused(() => lifecycleRules('s3', { abortMultipartDays: 1.5 }), 'abortMultipartDays');
    refused(() => lifecycleRules('s3', { packGraceDays: 0 }), 'packGraceDays');
    expect(
      lifecycleRules('s3', { archiveStorageClass: 'STANDARD_IA', archiveTransitionDays: 30 }),
    ).toHaveLength(6);
  });

  it('the ROS template holds the generated blocks as npm run infra writes them (AWS renders at package time)', async () => {
    const text = await readFile('infra/aliyun/ros.yaml', 'utf8');
    expect(writeRosBlocks(text)).toBe(text);
    const ros = yaml.load(text) as {
      Resources: { BucketLifecycle: { Properties: { Parameters: { Rules: unknown[] } } } };
    };
    // The rules are intrinsic functions of the parameters (evaluated in ros-template.test.ts), in
    // ali-oss's shape, for the custom resource that puts them.
    const rules = ros.Resources.BucketLifecycle.Properties.Parameters.Rules;
    expect(rules).toHaveLength(renderOss(lifecycleRules('oss')).length);
    expect(rules[0]).toMatchObject({ id: 'session-markers', expiration: { days: { Ref: 'RetentionDays' } } });
    expect(existsSync('infra/aws/lifecycle.json')).toBe(false);
    const resources = await readFile('infra/aws/resources.yml', 'utf8');
    expect(resources).toContain(['$', '{file(infra/aws/deployment.cjs):lifecycle}'].join(''));
  });

  it('apply sends exactly the rendered rules: S3 PutBucketLifecycleConfiguration through the S3 front', async () => {
    const servers = inject('servers');
    const client = createS3Client({
      endpoint: servers.s3,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    });
    const rendered = await applyS3Lifecycle(client, servers.bucket, { retentionDays: 9 });
    const stored = await (await fetch(`${servers.s3}/${servers.bucket}?lifecycle`)).text();
    expect(xmlValues(stored, 'ID')).toEqual(rendered.Rules.map((r) => r.ID));
    expect(xmlValues(stored, 'Value')).toEqual(['marker', 'state', 'archive', 'workspace', 'pack', '1']);
    expect(xmlValues(stored, 'Days').map(Number)).toEqual([9, 11, 365, 30, 180, 30, 7]); // the SDK writes Expiration before Transition
    expect(xmlValues(stored, 'DaysAfterInitiation').map(Number)).toEqual([7]);
    client.destroy();
  });

  it('apply sends exactly the rendered rules: ali-oss putBucketLifecycle through the OSS front', async () => {
    const servers = inject('servers');
    const client = new OSS({
      endpoint: servers.oss,
      bucket: servers.bucket,
      sldEnable: true,
      secure: false,
      ...OSS_CREDENTIALS,
    } as OSS.Options);
    const rendered = await applyOssLifecycle(client, servers.bucket, {
      retentionDays: 5,
      archiveStorageClass: 'IA',
    });
    const stored = await (await fetch(`${servers.s3}/${servers.bucket}?lifecycle`)).text();
    expect(xmlValues(stored, 'ID')).toEqual(rendered.map((r) => r.id));
    expect(xmlValues(stored, 'Key')).toEqual(['kind', 'kind', 'kind', 'kind', 'kind', 'gc']);
    expect(xmlValues(stored, 'StorageClass')).toEqual(['IA', 'Archive']);
    expect(xmlValues(stored, 'Days').map(Number)).toEqual([5, 7, 365, 30, 180, 30, 7, 7]); // ali-oss writes Expiration first too
  });
});
