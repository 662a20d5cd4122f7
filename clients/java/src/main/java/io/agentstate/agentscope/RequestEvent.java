package io.agentstate.agentscope;

/**
 * One HTTP attempt the store made, for metrics and tests: the method, the path (ids in their URL
 * form, without the query), the answer's status (0 when none arrived) and the bytes of the body
 * sent.
 */
public record RequestEvent(String method, String path, int status, int bodyBytes) {}
