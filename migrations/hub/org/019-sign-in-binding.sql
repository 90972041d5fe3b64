-- A SAML sign-in remembers the AuthnRequest it sent: the IdP's answer must be to that request,
-- posted by the browser that started it. Unfinished attempts and requests are swept by expiry.
ALTER TABLE login_attempts ADD COLUMN saml_request_id text;
CREATE INDEX login_attempts_expiry ON login_attempts (expires_at);
CREATE INDEX saml_requests_expiry ON saml_requests (expires_at);
CREATE INDEX saml_assertions_expiry ON saml_assertions (expires_at);
