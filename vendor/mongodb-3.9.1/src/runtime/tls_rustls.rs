use std::{
    convert::TryFrom,
    fs::File,
    io::{BufReader, Seek},
    sync::Arc,
};

#[cfg(feature = "rustls-tls-aws-lc")]
use rustls::crypto::aws_lc_rs as provider;
#[cfg(all(feature = "rustls-tls", not(feature = "rustls-tls-aws-lc")))]
use rustls::crypto::ring as provider;
use rustls::{
    client::{ClientConfig, WebPkiServerVerifier},
    pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer, ServerName},
    Error as TlsError,
    RootCertStore,
};

use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::TlsConnector;
use webpki_roots::TLS_SERVER_ROOTS;

use crate::{
    client::options::TlsOptions,
    error::{ErrorKind, Result},
};

pub(crate) type TlsStream<T> = tokio_rustls::client::TlsStream<T>;

/// Configuration required to use TLS. Creating this is expensive, so its best to cache this value
/// and reuse it for multiple connections.
#[derive(Clone)]
pub(crate) struct TlsConfig {
    connector: TlsConnector,
}

impl TlsConfig {
    /// Create a new `TlsConfig` from the provided options from the user.
    /// This operation is expensive, so the resultant `TlsConfig` should be cached.
    pub(crate) fn new(options: TlsOptions) -> Result<TlsConfig> {
        let mut tls_config = make_rustls_config(options)?;
        tls_config.enable_sni = true;

        let connector: TlsConnector = Arc::new(tls_config).into();
        Ok(TlsConfig { connector })
    }
}

pub(crate) async fn tls_connect<T: AsyncRead + AsyncWrite + Unpin>(
    host: &str,
    tcp_stream: T,
    cfg: &TlsConfig,
) -> Result<TlsStream<T>> {
    let name = ServerName::try_from(host)
        .map_err(|e| ErrorKind::DnsResolve {
            message: format!("could not resolve {:?}: {e}", crate::error::Redact(host)),
        })?
        .to_owned();

    let conn = cfg
        .connector
        .connect_with(name, tcp_stream, |c| {
            c.set_buffer_limit(None);
        })
        .await
        .map_err(verify::in_openssl_words)?;
    Ok(conn)
}

/// Converts `TlsOptions` into a rustls::ClientConfig.
fn make_rustls_config(cfg: TlsOptions) -> Result<rustls::ClientConfig> {
    let mut store = RootCertStore::empty();
    if let Some(path) = cfg.ca_file_path {
        let ders = CertificateDer::pem_file_iter(&path)
            .map_err(|err| ErrorKind::InvalidTlsConfig {
                message: format!(
                    "Unable to parse PEM-encoded root certificate from {}: {err}",
                    path.display()
                ),
            })?
            .flatten();
        store.add_parsable_certificates(ders);
    } else {
        store.extend(TLS_SERVER_ROOTS.iter().cloned());
    }

    let provider = Arc::new(provider::default_provider());
    let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider.clone())
        .build()
        .map_err(|e| ErrorKind::InvalidTlsConfig {
            message: format!("no usable CA certificate: {e}"),
        })?;
    let verifier = verify::MongoCertVerifier {
        webpki,
        allow_invalid_hostnames: cfg.allow_invalid_hostnames == Some(true),
    };
    let config_builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ErrorKind::InvalidTlsConfig {
            message: format!("built-in provider should support default protocol versions: {e}"),
        })?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier));

    let mut config = if let Some(path) = cfg.cert_key_file_path {
        let mut file = BufReader::new(File::open(&path)?);
        let mut certs = vec![];

        for cert in CertificateDer::pem_reader_iter(&mut file) {
            let cert = cert.map_err(|error| ErrorKind::InvalidTlsConfig {
                message: format!(
                    "Unable to parse PEM-encoded client certificate from {}: {error}",
                    path.display(),
                ),
            })?;
            certs.push(cert);
        }

        file.rewind()?;
        let key = 'key: {
            #[cfg(feature = "cert-key-password")]
            if let Some(key_pw) = cfg.tls_certificate_key_file_password.as_deref() {
                use rustls::pki_types::PrivatePkcs8KeyDer;
                use std::io::Read;
                let mut contents = vec![];
                file.read_to_end(&mut contents)?;
                file.rewind()?;
                // rumongo patch: a password given with a key that is not encrypted is ignored,
                // as OpenSSL ignores it.
                let encrypted = b"-----BEGIN ENCRYPTED PRIVATE KEY-----";
                if contents.windows(encrypted.len()).any(|w| w == encrypted) {
                    break 'key PrivatePkcs8KeyDer::from(super::pem::decrypt_private_key(
                        &contents, key_pw,
                    )?)
                    .into();
                }
            }
            match PrivateKeyDer::from_pem_reader(&mut file) {
                Ok(key) => break 'key key,
                Err(err) => {
                    return Err(ErrorKind::InvalidTlsConfig {
                        message: format!(
                            "Unable to parse PEM-encoded item from {}: {err}",
                            path.display(),
                        ),
                    }
                    .into())
                }
            }
        };

        config_builder
            .with_client_auth_cert(certs, key)
            .map_err(|error| ErrorKind::InvalidTlsConfig {
                message: error.to_string(),
            })?
    } else {
        config_builder.with_no_client_auth()
    };

    if let Some(true) = cfg.allow_invalid_certificates {
        // nosemgrep: rustls-dangerous
        config // mongodb rating: No Fix Needed
            .dangerous()
            .set_certificate_verifier(Arc::new(danger::NoCertVerifier(
                provider::default_provider(),
            )));
    }

    Ok(config)
}

mod danger {
    use super::*;
    use rustls::{
        client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier},
        crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider},
        pki_types::UnixTime,
        DigitallySignedStruct,
        SignatureScheme,
    };

    #[derive(Debug)]
    pub(super) struct NoCertVerifier(pub(super) CryptoProvider);

    impl ServerCertVerifier for NoCertVerifier {
        fn verify_server_cert(
            &self,
            _end_entity: &CertificateDer<'_>,
            _intermediates: &[CertificateDer<'_>],
            _server_name: &ServerName<'_>,
            _ocsp: &[u8],
            _now: UnixTime,
        ) -> std::result::Result<ServerCertVerified, TlsError> {
            Ok(ServerCertVerified::assertion())
        }

        fn verify_tls12_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> std::result::Result<HandshakeSignatureValid, TlsError> {
            verify_tls12_signature(
                message,
                cert,
                dss,
                &self.0.signature_verification_algorithms,
            )
        }

        fn verify_tls13_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> std::result::Result<HandshakeSignatureValid, TlsError> {
            verify_tls13_signature(
                message,
                cert,
                dss,
                &self.0.signature_verification_algorithms,
            )
        }

        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            self.0.signature_verification_algorithms.supported_schemes()
        }
    }
}

/// rumongo patch (vendor/README.md): the server certificate check of rustls's WebPKI verifier with
/// `tlsAllowInvalidHostnames`, and refusals in OpenSSL's words (`X509_verify_cert_error_string`, and
/// Node.js's `checkServerIdentity` for a name mismatch), which is what the MongoDB drivers built on
/// OpenSSL (the Node.js driver among them) report.
mod verify {
    use std::{fmt, net::IpAddr};

    use super::*;
    use rustls::{
        client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier},
        pki_types::UnixTime,
        CertificateError,
        DigitallySignedStruct,
        OtherError,
        SignatureScheme,
    };

    #[derive(Debug)]
    pub(super) struct MongoCertVerifier {
        pub(super) webpki: Arc<WebPkiServerVerifier>,
        pub(super) allow_invalid_hostnames: bool,
    }

    impl ServerCertVerifier for MongoCertVerifier {
        fn verify_server_cert(
            &self,
            end_entity: &CertificateDer<'_>,
            intermediates: &[CertificateDer<'_>],
            server_name: &ServerName<'_>,
            ocsp: &[u8],
            now: UnixTime,
        ) -> std::result::Result<ServerCertVerified, TlsError> {
            let refusal = match self.webpki.verify_server_cert(
                end_entity,
                intermediates,
                server_name,
                ocsp,
                now,
            ) {
                Err(TlsError::InvalidCertificate(refusal)) => refusal,
                other => return other,
            };
            // WebPKI checks the name last, once the chain and the dates are valid.
            let wrong_name = matches!(
                refusal,
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. }
            );
            if wrong_name && self.allow_invalid_hostnames {
                return Ok(ServerCertVerified::assertion());
            }
            match VerifyError::of(&refusal, end_entity, intermediates, server_name) {
                Some(error) => Err(TlsError::InvalidCertificate(CertificateError::Other(
                    OtherError(Arc::new(error)),
                ))),
                None => Err(TlsError::InvalidCertificate(refusal)),
            }
        }

        fn verify_tls12_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> std::result::Result<HandshakeSignatureValid, TlsError> {
            self.webpki.verify_tls12_signature(message, cert, dss)
        }

        fn verify_tls13_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> std::result::Result<HandshakeSignatureValid, TlsError> {
            self.webpki.verify_tls13_signature(message, cert, dss)
        }

        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            self.webpki.supported_verify_schemes()
        }
    }

    /// A refused server certificate, said as OpenSSL says it.
    #[derive(Debug)]
    pub(super) struct VerifyError(String);

    impl fmt::Display for VerifyError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(&self.0)
        }
    }

    impl std::error::Error for VerifyError {}

    impl VerifyError {
        fn of(
            refusal: &CertificateError,
            end_entity: &CertificateDer<'_>,
            intermediates: &[CertificateDer<'_>],
            server_name: &ServerName<'_>,
        ) -> Option<Self> {
            let text = match refusal {
                // OpenSSL tells apart where the chain stopped.
                CertificateError::UnknownIssuer => {
                    if self_issued(end_entity) {
                        "self-signed certificate"
                    } else if intermediates.last().is_some_and(|last| self_issued(last)) {
                        "self-signed certificate in certificate chain"
                    } else if !intermediates.is_empty() {
                        "unable to get local issuer certificate"
                    } else {
                        "unable to verify the first certificate"
                    }
                }
                CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                    "certificate has expired"
                }
                CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                    "certificate is not yet valid"
                }
                CertificateError::BadSignature => "certificate signature failure",
                CertificateError::Revoked => "certificate revoked",
                CertificateError::NotValidForNameContext { presented, .. } => {
                    return Some(Self(name_mismatch(server_name, presented)))
                }
                CertificateError::NotValidForName => {
                    return Some(Self(name_mismatch(server_name, &[])))
                }
                // WebPKI reads X.509 v3 only: OpenSSL also accepts v1 (no extensions, so no
                // subjectAltName), which `openssl req -x509` made by default before OpenSSL 3.
                CertificateError::Other(other) if format!("{other:?}").contains("UnsupportedCertVersion") => {
                    "unsupported certificate version: the server's certificate is X.509 v1 (no \
                     extensions), which rustls does not accept; reissue it as v3 with a \
                     subjectAltName"
                }
                _ => return None,
            };
            Some(Self(text.to_owned()))
        }
    }

    /// Node.js's `checkServerIdentity` message. `presented` are WebPKI's names of the certificate
    /// (`DnsName("a.example")`, `IpAddress(127.0.0.1)`), in the certificate's order.
    fn name_mismatch(server_name: &ServerName<'_>, presented: &[String]) -> String {
        let mut dns = vec![];
        let mut ips = vec![];
        let mut alt_names = vec![];
        for name in presented {
            if let Some(dns_name) = name.strip_prefix("DnsName(\"").and_then(|n| n.strip_suffix("\")")) {
                dns.push(dns_name);
                alt_names.push(format!("DNS:{dns_name}"));
            } else if let Some(ip) = name.strip_prefix("IpAddress(").and_then(|n| n.strip_suffix(')')) {
                ips.push(ip);
                alt_names.push(format!("IP Address:{ip}"));
            } else if let Some(uri) = name
                .strip_prefix("UniformResourceIdentifier(\"")
                .and_then(|n| n.strip_suffix("\")"))
            {
                alt_names.push(format!("URI:{uri}"));
            }
        }
        let reason = match server_name {
            ServerName::IpAddress(ip) => format!(
                "IP: {} is not in the cert's list: {}",
                IpAddr::from(*ip),
                ips.join(", ")
            ),
            ServerName::DnsName(host) if !dns.is_empty() => format!(
                "Host: {}. is not in the cert's altnames: {}",
                host.as_ref().trim_end_matches('.'),
                alt_names.join(", ")
            ),
            _ => "Cert does not contain a DNS name".to_owned(),
        };
        format!("Hostname/IP does not match certificate's altnames: {reason}")
    }

    /// Whether a certificate names itself as its issuer (a self-signed root, or a leaf standing
    /// alone): its DER `issuer` and `subject` are the same bytes.
    fn self_issued(cert: &CertificateDer<'_>) -> bool {
        (|| {
            let (certificate, _) = der_element(cert.as_ref())?;
            let (mut tbs, _) = der_element(certificate)?;
            // TBSCertificate: [0] version (optional), serialNumber, signature, issuer, validity,
            // subject.
            let mut fields = vec![];
            while !tbs.is_empty() && fields.len() < 6 {
                let (tag, rest) = (tbs[0], tbs);
                let (_, after) = der_element(rest)?;
                let len = rest.len() - after.len();
                if fields.is_empty() && tag != 0xa0 {
                    fields.push(&[][..]); // no version field (v1)
                }
                fields.push(&rest[..len]);
                tbs = after;
            }
            Some(fields.len() == 6 && fields[3] == fields[5])
        })()
        .unwrap_or(false)
    }

    /// The content of the DER element at the start of `input`, and what follows it.
    fn der_element(input: &[u8]) -> Option<(&[u8], &[u8])> {
        let first = *input.get(1)?;
        let (len, header) = if first < 0x80 {
            (first as usize, 2)
        } else {
            let count = (first & 0x7f) as usize;
            if count == 0 || count > 4 {
                return None;
            }
            let bytes = input.get(2..2 + count)?;
            (bytes.iter().fold(0usize, |n, b| (n << 8) | *b as usize), 2 + count)
        };
        let end = header.checked_add(len)?;
        Some((input.get(header..end)?, input.get(end..)?))
    }

    /// The I/O error a TLS handshake failed with, its message in OpenSSL's words when the
    /// verifier above refused the server's certificate.
    pub(super) fn in_openssl_words(error: std::io::Error) -> std::io::Error {
        let refusal = error
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<TlsError>())
            .and_then(|tls| match tls {
                TlsError::InvalidCertificate(CertificateError::Other(OtherError(other))) => {
                    other.downcast_ref::<VerifyError>()
                }
                _ => None,
            })
            .map(ToString::to_string);
        match refusal {
            Some(text) => std::io::Error::new(error.kind(), text),
            None => error,
        }
    }
}
