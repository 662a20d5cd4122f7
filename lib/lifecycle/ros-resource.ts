/**
 * The ROS custom resource that puts the bucket's lifecycle rules (infra/aliyun/ros.yaml,
 * `BucketLifecycle`): ROS's ALIYUN::OSS::Bucket cannot select rules by tag, so the template renders
 * the rules (lib/lifecycle/deployment.ts, as intrinsic functions of its parameters) into this
 * resource's `Parameters`, and its function puts them with OSS's PutBucketLifecycle.
 *
 * The protocol, as ROS documents it: the function receives the request as JSON (`RequestType`
 * Create, Update or Delete; `ResponseURL`; `StackId`, `RequestId`, `LogicalResourceId`,
 * `PhysicalResourceId` after a Create; `ResourceProperties`, the template's Parameters) and answers
 * by sending `{ Status: SUCCESS | FAILED, Reason, PhysicalResourceId, StackId, RequestId,
 * LogicalResourceId }` as JSON to the presigned ResponseURL:
 * https://www.alibabacloud.com/help/en/ros/user-guide/custom-resource-response-objects
 */

/** A ROS custom resource request. */
export interface RosResourceRequest {
  readonly RequestType: 'Create' | 'Update' | 'Delete';
  readonly ResponseURL: string;
  readonly StackId: string;
  readonly RequestId: string;
  readonly LogicalResourceId: string;
  readonly PhysicalResourceId?: string;
  readonly RegionId?: string;
  readonly ResourceProperties: { readonly BucketName?: string; readonly Rules?: unknown };
}

/** What the lifecycle resource does with a request's bucket and rules (applyOssRules). */
export type PutRules = (
  bucket: string,
  rules: readonly unknown[],
  region: string | undefined,
) => Promise<void>;

/**
 * Handles one request: Create and Update put the rules, Delete leaves the bucket's rules to the
 * bucket's own deletion; then answers ROS. Never throws for a bad request: it answers FAILED with
 * the reason (ROS then rolls back), so the stack never waits for the timeout.
 */
export async function handleLifecycleResource(
  request: RosResourceRequest,
  putRules: PutRules,
  send: typeof fetch = fetch,
): Promise<{ Status: 'SUCCESS' | 'FAILED'; Reason?: string }> {
  const bucket = request.ResourceProperties?.BucketName;
  let outcome: { Status: 'SUCCESS' | 'FAILED'; Reason?: string } = { Status: 'SUCCESS' };
  try {
    if (request.RequestType !== 'Delete') {
      const rules = request.ResourceProperties?.Rules;
      if (!bucket) throw new Error('BucketName is missing');
      if (!Array.isArray(rules) || rules.length === 0) throw new Error('Rules must be a non-empty list');
      await putRules(bucket, rules, request.RegionId);
    }
  } catch (error) {
    outcome = { Status: 'FAILED', Reason: String((error as Error)?.message ?? error).slice(0, 1000) };
  }
  const body = JSON.stringify({
    ...outcome,
    PhysicalResourceId: request.PhysicalResourceId ?? `${bucket ?? 'bucket'}-lifecycle`,
    StackId: request.StackId,
    RequestId: request.RequestId,
    LogicalResourceId: request.LogicalResourceId,
  });
  const answer = await send(request.ResponseURL, {
    method: 'POST',
    headers: { 'content-type': 'application/json', date: new Date().toUTCString() },
    body,
  });
  if (!answer.ok) throw new Error(`ROS did not take the answer: ${answer.status}`);
  return outcome;
}
