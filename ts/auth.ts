/**
 * The authentication rules the official driver applies on the JS side, before or around what the
 * Rust driver does: the password a user name without one gets, the MONGODB-AWS credentials it
 * refuses, and the MONGODB-OIDC callback (a JS function, which no connection string can carry).
 * @module
 */
import type { Document } from 'bson'
import {
  keepCallbackFailure,
  MongoAPIError,
  MongoInvalidArgumentError,
  MongoMissingCredentialsError,
} from './errors.js'

/** The authentication mechanisms (`authMechanism`): the official driver's `AuthMechanism`, in its order. */
export const AuthMechanism = Object.freeze({
  MONGODB_AWS: 'MONGODB-AWS',
  MONGODB_DEFAULT: 'DEFAULT',
  MONGODB_GSSAPI: 'GSSAPI',
  MONGODB_PLAIN: 'PLAIN',
  MONGODB_SCRAM_SHA1: 'SCRAM-SHA-1',
  MONGODB_SCRAM_SHA256: 'SCRAM-SHA-256',
  MONGODB_X509: 'MONGODB-X509',
  MONGODB_OIDC: 'MONGODB-OIDC',
} as const)
export type AuthMechanism = (typeof AuthMechanism)[keyof typeof AuthMechanism]

/** The mechanisms for which the official driver sends a user name without a password as `''`. */
const PASSWORD_MECHANISMS = new Set(['', 'DEFAULT', 'SCRAM-SHA-1', 'SCRAM-SHA-256', 'PLAIN'])

/**
 * The password the Rust driver gets for a user name given without one: `''` for the password
 * mechanisms, as the official driver (its MongoCredentials default the password to `''`, so the
 * attempt is sent and the server refuses it with code 18, or SCRAM-SHA-1 says "Password cannot be
 * empty"); without it the Rust driver failed before sending anything ("no password supplied").
 */
export function passwordFor(
  password: string | undefined,
  username: string | undefined,
  mechanism: string,
): string | undefined {
  if (password !== undefined || !username) return password
  return PASSWORD_MECHANISMS.has(mechanism.toUpperCase()) ? '' : undefined
}

/**
 * The official driver 7's MONGODB-AWS rule: credentials come from the environment the AWS SDK reads
 * (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, ...), never from the connection
 * string or the options.
 */
export function checkAwsCredentials(
  mechanism: string,
  username: string | undefined,
  hasPassword: boolean,
  properties: string | undefined,
): void {
  if (mechanism.toUpperCase() !== 'MONGODB-AWS') return
  if (username || hasPassword) {
    throw new MongoAPIError(
      'username and password cannot be provided when using MONGODB-AWS. Credentials must be provided in a manner that can be read by the AWS SDK.',
    )
  }
  if (properties !== undefined && /(^|,)AWS_SESSION_TOKEN:/i.test(properties)) {
    throw new MongoAPIError(
      'AWS_SESSION_TOKEN cannot be provided when using MONGODB-AWS. Credentials must be provided in a manner that can be read by the AWS SDK.',
    )
  }
}

/** `K:V` of an `authMechanismProperties` list (`ENVIRONMENT:k8s,TOKEN_RESOURCE:api`). */
export function mechanismProperty(properties: string | undefined, name: string): string | undefined {
  for (const pair of properties?.split(',') ?? []) {
    const at = pair.indexOf(':')
    if (at > 0 && pair.slice(0, at) === name) return pair.slice(at + 1)
  }
  return undefined
}

const OIDC = 'MONGODB-OIDC'
const OIDC_ENVIRONMENTS = ['test', 'azure', 'gcp', 'k8s']

/**
 * The official driver's checks of MONGODB-OIDC options (its `MongoCredentials.validate`), made when
 * the client is created, with its messages: the Rust driver checked less, and later, failing the
 * first connection with its own text. Then `ENVIRONMENT:azure` and `gcp`, which fetch the token
 * from the cloud's metadata endpoint, are refused: the Rust driver does that only with its
 * `azure-oidc` / `gcp-oidc` features (an HTTP client more in the binary), which rumongo is built
 * without. `k8s` (a token file) and an `OIDC_CALLBACK` work.
 */
export function checkOidcOptions(
  mechanism: string,
  username: string | undefined,
  hasPassword: boolean,
  properties: string | undefined,
  hasCallback: boolean,
): void {
  if (mechanism.toUpperCase() !== OIDC) return
  const environment = mechanismProperty(properties, 'ENVIRONMENT')
  if (username && environment && environment !== 'azure') {
    throw new MongoInvalidArgumentError(
      `username and ENVIRONMENT '${environment}' may not be used together for mechanism '${OIDC}'.`,
    )
  }
  if (username && hasPassword) {
    throw new MongoInvalidArgumentError(
      `No password is allowed in ENVIRONMENT '${environment}' for '${OIDC}'.`,
    )
  }
  if (
    (environment === 'azure' || environment === 'gcp') &&
    !mechanismProperty(properties, 'TOKEN_RESOURCE')
  ) {
    throw new MongoInvalidArgumentError(
      'TOKEN_RESOURCE must be set in the auth mechanism properties when ENVIRONMENT is azure or gcp.',
    )
  }
  if (environment && !OIDC_ENVIRONMENTS.includes(environment)) {
    throw new MongoInvalidArgumentError(
      `Currently only a ENVIRONMENT in ${OIDC_ENVIRONMENTS.join(',')} is supported for mechanism '${OIDC}'.`,
    )
  }
  if (!environment && !hasCallback) {
    throw new MongoInvalidArgumentError(
      `Either a ENVIRONMENT, OIDC_CALLBACK, or OIDC_HUMAN_CALLBACK must be specified for mechanism '${OIDC}'.`,
    )
  }
  if (environment && hasCallback) {
    throw new MongoInvalidArgumentError(
      `ENVIRONMENT may not be used together with OIDC_CALLBACK or OIDC_HUMAN_CALLBACK for mechanism '${OIDC}'.`,
    )
  }
  if (environment === 'azure' || environment === 'gcp') {
    throw new MongoInvalidArgumentError(
      `rumongo does not support ENVIRONMENT:${environment} for ${OIDC} (the Rust driver it connects with is built without its ${environment}-oidc feature): use an OIDC_CALLBACK that fetches the token`,
    )
  }
}

/** The official driver's OIDC callback parameters (`OIDCCallbackParams`). */
export interface OIDCCallbackParams {
  timeoutContext: AbortSignal
  version: number
  username?: string
  tokenAudience?: string
  idpInfo?: { issuer: string; clientId?: string; requestScopes?: string[] }
  refreshToken?: string
}

/** What an OIDC callback returns (`OIDCResponse`). */
export interface OIDCResponse {
  accessToken: string
  expiresInSeconds?: number
  refreshToken?: string
}

export type OIDCCallbackFunction = (params: OIDCCallbackParams) => Promise<OIDCResponse>

/** An OIDC callback taken out of `authMechanismProperties`. */
export interface OidcCallback {
  callback: OIDCCallbackFunction
  /** `OIDC_HUMAN_CALLBACK` rather than `OIDC_CALLBACK`. */
  human: boolean
}

/**
 * `options` without the OIDC callback functions of `authMechanismProperties` (which would go into
 * the connection string as their source text), and the callback.
 */
export function takeOidcCallback<T extends Document>(
  options: T,
): { options: T; oidc: OidcCallback | undefined } {
  const key = Object.keys(options).find((name) => name.toLowerCase() === 'authmechanismproperties')
  const properties = key === undefined ? undefined : (options[key] as Document | null | undefined)
  if (properties == null || typeof properties !== 'object') return { options, oidc: undefined }
  const rest: Document = { ...properties }
  let oidc: OidcCallback | undefined
  for (const [name, human] of [
    ['OIDC_CALLBACK', false],
    ['OIDC_HUMAN_CALLBACK', true],
  ] as const) {
    const callback = rest[name]
    if (callback === undefined) continue
    delete rest[name]
    if (typeof callback !== 'function') {
      throw new MongoInvalidArgumentError(`${name} must be a function`)
    }
    if (oidc !== undefined) {
      throw new MongoInvalidArgumentError('OIDC_CALLBACK and OIDC_HUMAN_CALLBACK may not be used together')
    }
    oidc = { callback: callback as OIDCCallbackFunction, human }
  }
  if (oidc === undefined) return { options, oidc }
  const remaining = Object.keys(rest).length > 0 ? rest : undefined
  return { options: { ...options, [key!]: remaining }, oidc }
}

/** The official driver's message for a callback answer without an `accessToken` or with other fields. */
const CALLBACK_RESULT_ERROR = 'User provided OIDC callbacks must return a valid object with an accessToken.'
const RESULT_PROPERTIES = ['accessToken', 'expiresInSeconds', 'refreshToken']

/** What the native side passes when it needs a token (`OidcCallbackContext` in src/oidc.rs). */
interface NativeOidcContext {
  version: number
  timeoutMs?: number | null
  refreshToken?: string | null
  idpInfo?: { issuer: string; clientId?: string | null; requestScopes?: string[] | null } | null
}

/**
 * The function the native side calls for a token: the user's callback with the official driver's
 * parameters, its answer checked as the official driver checks it. A failure is kept by number
 * (`keepCallbackFailure`), so the operation that needed the token rejects with it unchanged.
 */
export function nativeOidcCallback(
  oidc: OidcCallback,
  username: string | undefined,
  tokenAudience: string | undefined,
): (context: NativeOidcContext) => Promise<OIDCResponse> {
  return async (context) => {
    try {
      const params: OIDCCallbackParams = {
        timeoutContext: AbortSignal.timeout(Math.max(0, Math.round(context.timeoutMs ?? 60_000))),
        version: context.version,
      }
      if (username) params.username = username
      if (tokenAudience) params.tokenAudience = tokenAudience
      if (oidc.human && context.idpInfo) {
        const { issuer, clientId, requestScopes } = context.idpInfo
        params.idpInfo = { issuer }
        if (clientId != null) params.idpInfo.clientId = clientId
        if (requestScopes != null) params.idpInfo.requestScopes = requestScopes
      }
      if (oidc.human && context.refreshToken != null) params.refreshToken = context.refreshToken
      const result: unknown = await oidc.callback(params)
      if (
        result == null ||
        typeof result !== 'object' ||
        typeof (result as OIDCResponse).accessToken !== 'string' ||
        !Object.getOwnPropertyNames(result).every((name) => RESULT_PROPERTIES.includes(name))
      ) {
        throw new MongoMissingCredentialsError(CALLBACK_RESULT_ERROR)
      }
      const { accessToken, expiresInSeconds, refreshToken } = result as OIDCResponse
      return { accessToken, expiresInSeconds, refreshToken }
    } catch (error) {
      throw new Error(String(keepCallbackFailure(error)))
    }
  }
}
