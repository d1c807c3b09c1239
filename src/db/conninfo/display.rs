//! Showing connection parameters without their secrets: the redacted connection string, the
//! sources `pgplan info -v` lists, and the redaction of any conninfo text a user wrote.

use super::*;

/// Quotes a value for a `key=value` connection string when it needs it.
pub(super) fn quote_value(value: &str) -> String {
    if !value.is_empty()
        && !value
            .chars()
            .any(|c| is_c_space(c) || c == '\'' || c == '\\')
    {
        return value.to_string();
    }
    let mut quoted = String::with_capacity(value.len() + 2);
    quoted.push('\'');
    for c in value.chars() {
        if c == '\'' || c == '\\' {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    quoted.push('\'');
    quoted
}

pub(super) fn seconds_text(duration: Duration) -> String {
    duration.as_secs().to_string()
}

impl ConnParams {
    /// The hosts' `host` values joined as libpq's `host=` list (empty entries for hostaddr-only
    /// hosts).
    pub(super) fn host_list(&self) -> String {
        self.hosts
            .iter()
            .map(|host| host.host.clone().unwrap_or_default())
            .collect::<Vec<_>>()
            .join(",")
    }

    pub(super) fn hostaddr_list(&self) -> Option<String> {
        self.hosts
            .iter()
            .any(|host| host.hostaddr.is_some())
            .then(|| {
                self.hosts
                    .iter()
                    .map(|host| {
                        host.hostaddr
                            .map(|addr| addr.to_string())
                            .unwrap_or_default()
                    })
                    .collect::<Vec<_>>()
                    .join(",")
            })
    }

    pub(super) fn port_list(&self) -> String {
        self.hosts
            .iter()
            .map(|host| host.port.to_string())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Every effective (keyword, value) pair; secrets appear as `********`.
    pub(super) fn effective_pairs(&self) -> Vec<(&'static str, String)> {
        let mut pairs = vec![("host", self.host_list())];
        if let Some(hostaddrs) = self.hostaddr_list() {
            pairs.push(("hostaddr", hostaddrs));
        }
        pairs.push(("port", self.port_list()));
        pairs.push(("user", self.user.value.clone()));
        pairs.push(("dbname", self.dbname.value.clone()));
        if self.hosts.iter().any(|host| host.password.is_some()) {
            pairs.push(("password", REDACTED.to_string()));
        }
        pairs.push(("application_name", self.application_name.value.clone()));
        if let Some(options) = &self.options {
            pairs.push(("options", options.value.clone()));
        }
        if let Some(timeout) = &self.connect_timeout {
            pairs.push(("connect_timeout", seconds_text(timeout.value)));
        }
        pairs.push(("sslmode", self.sslmode.value.to_string()));
        if self.sslnegotiation.value != SslNegotiation::Postgres {
            pairs.push(("sslnegotiation", self.sslnegotiation.value.to_string()));
        }
        if let Some(root) = &self.sslrootcert {
            pairs.push(("sslrootcert", root.value.clone()));
        }
        if let Some(cert) = &self.sslcert {
            pairs.push(("sslcert", cert.value.to_string_lossy().into_owned()));
        }
        if let Some(key) = &self.sslkey {
            pairs.push(("sslkey", key.value.to_string_lossy().into_owned()));
        }
        if self.sslpassword.is_some() {
            pairs.push(("sslpassword", REDACTED.to_string()));
        }
        if let Some(min) = &self.ssl_min_protocol_version {
            pairs.push(("ssl_min_protocol_version", min.value.to_string()));
        }
        if let Some(max) = &self.ssl_max_protocol_version {
            pairs.push(("ssl_max_protocol_version", max.value.to_string()));
        }
        pairs.push((
            "target_session_attrs",
            self.target_session_attrs.value.to_string(),
        ));
        pairs.push(("channel_binding", self.channel_binding.value.to_string()));
        pairs.push((
            "load_balance_hosts",
            self.load_balance_hosts.value.to_string(),
        ));
        if !self.keepalives.enabled.value {
            pairs.push(("keepalives", "0".to_string()));
        }
        if let Some(idle) = &self.keepalives.idle {
            pairs.push(("keepalives_idle", seconds_text(idle.value)));
        }
        if let Some(interval) = &self.keepalives.interval {
            pairs.push(("keepalives_interval", seconds_text(interval.value)));
        }
        if let Some(count) = &self.keepalives.count {
            pairs.push(("keepalives_count", count.value.to_string()));
        }
        if let Some(timeout) = &self.keepalives.tcp_user_timeout {
            pairs.push(("tcp_user_timeout", timeout.value.as_millis().to_string()));
        }
        pairs
    }

    /// A connection string for display: every effective value, each password replaced by
    /// `********` — never the password itself.
    pub fn redacted(&self) -> String {
        self.effective_pairs()
            .into_iter()
            .map(|(keyword, value)| format!("{keyword}={}", quote_value(&value)))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Per parameter: name, displayed value (passwords always `********`), and where it came from,
    /// for `pgplan info -v`.
    pub fn explain_sources(&self) -> Vec<(String, String, String)> {
        let mut rows = Vec::new();
        let mut row = |name: String, value: String, source: &Source| {
            rows.push((name, value, source.to_string()));
        };
        self.host_source_rows(&mut row);
        self.session_source_rows(&mut row);
        self.tls_source_rows(&mut row);
        self.routing_source_rows(&mut row);
        self.keepalive_source_rows(&mut row);
        rows
    }

    /// Each host's host, hostaddr, port and password, numbered when there are several.
    fn host_source_rows(&self, row: &mut dyn FnMut(String, String, &Source)) {
        let numbered = self.hosts.len() > 1;
        for (index, host) in self.hosts.iter().enumerate() {
            let name = |base: &str| {
                if numbered {
                    format!("{base}[{}]", index + 1)
                } else {
                    base.to_string()
                }
            };
            if let Some(text) = &host.host {
                let kind = if host.is_socket {
                    " (Unix socket directory)"
                } else {
                    ""
                };
                row(name("host"), format!("{text}{kind}"), &host.host_source);
            }
            if let Some(addr) = host.hostaddr {
                row(name("hostaddr"), addr.to_string(), &host.host_source);
            }
            row(name("port"), host.port.to_string(), &host.port_source);
            if let Some(password) = &host.password {
                row(name("password"), REDACTED.to_string(), &password.source);
            }
        }
    }

    /// Who connects to what: user, database, service, password file, application name, options
    /// and the connect timeout.
    fn session_source_rows(&self, row: &mut dyn FnMut(String, String, &Source)) {
        row("user".into(), self.user.value.clone(), &self.user.source);
        let dbname_value = if self.dbname.source == Source::Default {
            format!("{} (same as user)", self.dbname.value)
        } else {
            self.dbname.value.clone()
        };
        row("dbname".into(), dbname_value, &self.dbname.source);
        if let Some(service) = &self.service {
            row("service".into(), service.value.clone(), &service.source);
        }
        if let Some(passfile) = &self.passfile {
            row(
                "passfile".into(),
                passfile.value.display().to_string(),
                &passfile.source,
            );
        }
        row(
            "application_name".into(),
            self.application_name.value.clone(),
            &self.application_name.source,
        );
        if let Some(options) = &self.options {
            row("options".into(), options.value.clone(), &options.source);
        }
        match &self.connect_timeout {
            Some(timeout) => row(
                "connect_timeout".into(),
                format!("{} s", timeout.value.as_secs()),
                &timeout.source,
            ),
            None => row(
                "connect_timeout".into(),
                "none (wait forever)".into(),
                &Source::Default,
            ),
        }
    }

    /// The TLS settings and files.
    fn tls_source_rows(&self, row: &mut dyn FnMut(String, String, &Source)) {
        row(
            "sslmode".into(),
            self.sslmode.value.to_string(),
            &self.sslmode.source,
        );
        row(
            "sslnegotiation".into(),
            self.sslnegotiation.value.to_string(),
            &self.sslnegotiation.source,
        );
        if let Some(root) = &self.sslrootcert {
            row("sslrootcert".into(), root.value.clone(), &root.source);
        }
        if let Some(cert) = &self.sslcert {
            row(
                "sslcert".into(),
                cert.value.display().to_string(),
                &cert.source,
            );
        }
        if let Some(key) = &self.sslkey {
            row(
                "sslkey".into(),
                key.value.display().to_string(),
                &key.source,
            );
        }
        if let Some(password) = &self.sslpassword {
            row("sslpassword".into(), REDACTED.to_string(), &password.source);
        }
        if let Some(min) = &self.ssl_min_protocol_version {
            row(
                "ssl_min_protocol_version".into(),
                min.value.to_string(),
                &min.source,
            );
        }
        if let Some(max) = &self.ssl_max_protocol_version {
            row(
                "ssl_max_protocol_version".into(),
                max.value.to_string(),
                &max.source,
            );
        }
    }

    /// Which server of the list is wanted and how it must authenticate.
    fn routing_source_rows(&self, row: &mut dyn FnMut(String, String, &Source)) {
        row(
            "target_session_attrs".into(),
            self.target_session_attrs.value.to_string(),
            &self.target_session_attrs.source,
        );
        row(
            "channel_binding".into(),
            self.channel_binding.value.to_string(),
            &self.channel_binding.source,
        );
        row(
            "load_balance_hosts".into(),
            self.load_balance_hosts.value.to_string(),
            &self.load_balance_hosts.source,
        );
    }

    /// TCP keepalives and the settings sent at startup.
    fn keepalive_source_rows(&self, row: &mut dyn FnMut(String, String, &Source)) {
        row(
            "keepalives".into(),
            if self.keepalives.enabled.value {
                "1"
            } else {
                "0"
            }
            .into(),
            &self.keepalives.enabled.source,
        );
        if let Some(idle) = &self.keepalives.idle {
            row(
                "keepalives_idle".into(),
                format!("{} s", idle.value.as_secs()),
                &idle.source,
            );
        }
        if let Some(interval) = &self.keepalives.interval {
            row(
                "keepalives_interval".into(),
                format!("{} s", interval.value.as_secs()),
                &interval.source,
            );
        }
        if let Some(count) = &self.keepalives.count {
            row(
                "keepalives_count".into(),
                count.value.to_string(),
                &count.source,
            );
        }
        if let Some(timeout) = &self.keepalives.tcp_user_timeout {
            row(
                "tcp_user_timeout".into(),
                format!("{} ms", timeout.value.as_millis()),
                &timeout.source,
            );
        }
        for (parameter, setting) in &self.startup_settings {
            row(
                format!("startup {parameter}"),
                setting.value.clone(),
                &setting.source,
            );
        }
    }
}

/// Replaces each byte range in `spans` (merged where they overlap) with `********`.
pub(super) fn replace_spans(text: &str, mut spans: Vec<(usize, usize)>) -> String {
    spans.retain(|(start, end)| start < end && *end <= text.len());
    spans.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut cursor = 0;
    for (start, end) in spans {
        if end <= cursor {
            continue;
        }
        let start = start.max(cursor);
        out.push_str(text.get(cursor..start).unwrap_or_default());
        out.push_str(REDACTED);
        cursor = end;
    }
    out.push_str(text.get(cursor..).unwrap_or_default());
    out
}

/// Redacts the password in any connection string or URL the user typed, well-formed or not, for
/// echoing `-d` values back in reports and errors. A plain database name comes back unchanged.
pub fn redact(conninfo: &str) -> String {
    if url_like_scheme(conninfo).is_some()
        || (uri_prefix_len(conninfo) > 0 && parse_uri(conninfo).is_err())
    {
        redact_user_info(conninfo)
    } else if uri_prefix_len(conninfo) > 0 {
        redact_uri(conninfo)
    } else if conninfo.contains('=') {
        redact_keyword_value(conninfo)
    } else {
        conninfo.to_string()
    }
}

/// A URL that does not parse (or has a scheme libpq does not know): nothing of its user info
/// is shown, from after `scheme://` up to the last `@` (a user name, a password, or a password
/// with a raw `@` in it), and password-like query parameters are hidden as in [`redact_uri`].
pub(super) fn redact_user_info(text: &str) -> String {
    let Some(scheme_end) = text.find("://").map(|i| i + 3) else {
        return redact_uri(text);
    };
    let masked = match text[scheme_end..].rfind('@') {
        Some(offset) => format!(
            "{}{REDACTED}{}",
            &text[..scheme_end],
            &text[scheme_end + offset..]
        ),
        None => text.to_owned(),
    };
    if uri_prefix_len(&masked) > 0 {
        redact_uri(&masked)
    } else {
        masked
    }
}

pub(super) fn redact_uri(uri: &str) -> String {
    let bytes = uri.as_bytes();
    let start = uri_prefix_len(uri);
    let mut spans = Vec::new();
    // The password of user:password@, found the way libpq finds it (the first "@" before any
    // "/")...
    let libpq_at = bytes[start..]
        .iter()
        .position(|b| *b == b'@' || *b == b'/')
        .map(|offset| start + offset)
        .filter(|index| bytes[*index] == b'@');
    if let Some(at) = libpq_at
        && let Some(colon) = uri[start..at].find(':')
    {
        spans.push((start + colon + 1, at));
    }
    // ...and, since a user may have typed a raw "@" or "/" inside the password (which libpq then
    // splits elsewhere), also up to the last "@" before the query string. This can hide a little
    // more than the password when a database name contains "@", never less.
    let query_from = libpq_at.unwrap_or(start);
    let query_start = uri[query_from..]
        .find('?')
        .map_or(uri.len(), |offset| query_from + offset);
    if let Some(last_at) = uri[start..query_start]
        .rfind('@')
        .map(|offset| start + offset)
        && let Some(colon) = uri[start..last_at].find(':')
    {
        spans.push((start + colon + 1, last_at));
    }
    // Any query parameter whose name looks like a password, wherever the query starts.
    if let Some(question) = uri[start..].find('?') {
        let mut offset = start + question + 1;
        for piece in uri[offset..].split('&') {
            let decoded = |raw: &str| percent_decode(raw).unwrap_or_else(|_| raw.to_string());
            let name_end = piece.find('=');
            if is_secret_name(&decoded(&piece[..name_end.unwrap_or(piece.len())])) {
                // With no "=", the password may be glued to its name: hide the whole piece.
                let hidden_from = name_end.map_or(0, |equals| equals + 1);
                spans.push((offset + hidden_from, offset + piece.len()));
            }
            offset += piece.len() + 1;
        }
    }
    replace_spans(uri, spans)
}

pub(super) fn redact_keyword_value(text: &str) -> String {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let len = chars.len();
    let byte_at = |index: usize| chars.get(index).map_or(text.len(), |(offset, _)| *offset);
    let is_space = |index: usize| chars.get(index).is_some_and(|(_, c)| is_c_space(*c));
    let char_at = |index: usize| chars.get(index).map(|(_, c)| *c);
    let mut spans = Vec::new();
    let mut after_secret = false;
    let mut i = 0;
    while i < len {
        if is_space(i) {
            i += 1;
            continue;
        }
        let word_start = i;
        while i < len && char_at(i) != Some('=') && !is_space(i) {
            i += 1;
        }
        let word_end = i;
        let mut j = i;
        while is_space(j) {
            j += 1;
        }
        if char_at(j) != Some('=') {
            // A stray word after a password value is probably the rest of a password that
            // contains a space.
            if after_secret {
                spans.push((byte_at(word_start), byte_at(word_end)));
            }
            i = j.max(word_end + 1);
            continue;
        }
        i = j + 1;
        while is_space(i) {
            i += 1;
        }
        let value_start = i;
        if char_at(i) == Some('\'') {
            i += 1;
            while i < len {
                match char_at(i) {
                    Some('\\') => i += 2,
                    Some('\'') => {
                        i += 1;
                        break;
                    }
                    _ => i += 1,
                }
            }
        } else {
            while i < len && !is_space(i) {
                i += if char_at(i) == Some('\\') { 2 } else { 1 };
            }
        }
        let value_end = i.min(len);
        let word = text
            .get(byte_at(word_start)..byte_at(word_end))
            .unwrap_or_default();
        after_secret = is_secret_name(word);
        if after_secret && value_start < value_end {
            spans.push((byte_at(value_start), byte_at(value_end)));
        }
    }
    replace_spans(text, spans)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::conninfo::testing::*;

    // --- display and redaction ------------------------------------------------------------

    const SECRET: &str = "S3cr3t-pw";

    fn assert_hidden(text: &str) {
        assert!(!text.contains(SECRET), "secret leaked: {text}");
        assert!(
            !text.contains("S3cr3t"),
            "part of the secret leaked: {text}"
        );
    }

    #[test]
    fn secret_never_prints() {
        let secret = Secret::new(SECRET);
        assert_eq!(format!("{secret}"), REDACTED);
        assert_eq!(format!("{secret:?}"), REDACTED);
        assert_eq!(secret.expose(), SECRET);
    }

    #[test]
    fn passwords_never_appear_in_redacted_debug_or_explain() {
        let fx = Fixture::new().var("PGPASSWORD", SECRET);
        let key = fx.write("k.key", "key", 0o600);
        let cert = fx.write("k.crt", "cert", 0o600);
        let inputs = [
            format!("postgresql://alice:{SECRET}@db.example/app?sslpassword={SECRET}"),
            format!(
                "host=db.example password='{SECRET}' sslpassword={SECRET} sslcert={} sslkey={}",
                cert.display(),
                key.display()
            ),
            "host=db.example".to_string(),
        ];
        for input in &inputs {
            let params = ok(fx.resolve_d(input));
            assert!(params.hosts[0].password.is_some());
            let redacted = params.redacted();
            assert!(redacted.contains("password=********"), "{redacted}");
            assert_hidden(&redacted);
            assert_hidden(&format!("{params:?}"));
            assert_hidden(&format!("{params:#?}"));
            for (name, value, source) in params.explain_sources() {
                assert_hidden(&format!("{name} {value} {source}"));
            }
            assert_hidden(&redact(input));
        }
        assert_hidden(&format!("{:?}", fx.env()));
    }

    #[test]
    fn passwords_from_files_never_appear() {
        let fx = Fixture::new();
        fx.write("home/.pgpass", &format!("*:*:*:*:{SECRET}\n"), 0o600);
        fx.write(
            "home/.pg_service.conf",
            &format!("[s]\npassword={SECRET}\nhost=h\n"),
            0o600,
        );
        for params in [
            ok(fx.resolve(&ConnRequest::default())),
            ok(fx.resolve_d("service=s")),
        ] {
            assert!(params.hosts[0].password.is_some());
            assert_hidden(&params.redacted());
            assert_hidden(&format!("{params:?}"));
            assert_hidden(&format!("{:?}", params.explain_sources()));
        }
    }

    #[test]
    fn passwords_never_appear_in_error_messages() {
        let fx = Fixture::new();
        let bad_inputs = [
            format!("password={SECRET} sslmode=bogus"),
            format!("password={SECRET} port=0"),
            format!("password={SECRET} oops"),
            "password=S3cr3t -pw".to_string(),
            format!("password='{SECRET}"),
            format!("sslpassword={SECRET} bogus=1"),
            format!("postgresql://u:{SECRET}@[::1/db"),
            format!("postgresql://u:{SECRET}@[]/db"),
            format!("postgresql://u:{SECRET}@[::1]x/db"),
            format!("postgresql://u:{SECRET}%zz@h/db"),
            format!("postgresql://u:{SECRET}%00@h/db"),
            format!("postgresql://u:{SECRET}%ff@h/db"),
            format!("postgresql://h/db?password={SECRET}=x"),
            format!("postgresql://h/db?password={SECRET}%zz"),
            format!("postgresql://h/db?password={SECRET}&bogus=1"),
            format!("postgresql://u:{SECRET}@h:99999/db"),
            format!("postgresql://h/db?password{SECRET}"),
        ];
        for input in &bad_inputs {
            let error = err(fx.resolve_d(input));
            assert_hidden(&error.to_string());
            assert_hidden(&format!("{error:?}"));
            assert_hidden(&redact(input));
        }
        let fx = Fixture::new()
            .var("PGPASSWORD", SECRET)
            .var("PGSSLMODE", "nope");
        let error = err(fx.resolve(&ConnRequest::default()));
        assert_hidden(&format!("{error} {error:?}"));
    }

    #[test]
    fn redact_keeps_everything_but_the_password() {
        assert_eq!(
            redact("host=h password=pw user=u"),
            "host=h password=******** user=u"
        );
        assert_eq!(
            redact("host=h password = 'p w' user=u"),
            "host=h password = ******** user=u"
        );
        assert_eq!(redact("password=p w"), "password=******** ********");
        assert_eq!(redact("password="), "password=");
        assert_eq!(redact("passfile=/x/pgpass"), "passfile=/x/pgpass");
        assert_eq!(
            redact("postgresql://u:pw@h/db"),
            "postgresql://u:********@h/db"
        );
        assert_eq!(
            redact("postgresql://u@h/db?password=x&sslmode=require"),
            "postgresql://u@h/db?password=********&sslmode=require"
        );
        // libpq's parameter names are case-sensitive: this one does not parse, so the user
        // info goes too.
        assert_eq!(
            redact("postgresql://u@h/db?Password=x&sslmode=require"),
            "postgresql://********@h/db?Password=********&sslmode=require"
        );
        assert_eq!(
            redact("postgresql://u@h/db?pass%77ord=x"),
            "postgresql://u@h/db?pass%77ord=********"
        );
        assert_eq!(
            redact("postgresql://h/db?passwordx&a=b"),
            "postgresql://h/db?********&a=b"
        );
        assert_eq!(redact("mydb"), "mydb");
        assert_eq!(redact(""), "");
        // Not parseable, or a scheme libpq does not know: no part of the user info is shown.
        assert_eq!(
            redact("postgresql://u:Sup@Sekr3t@host/db"),
            "postgresql://********@host/db"
        );
        assert_eq!(
            redact("postgressql://u:Sup@Sekr3t@host/db?password=x"),
            "postgressql://********@host/db?password=x"
        );
        assert_eq!(
            redact("postgresql://u:pw@[::1/db"),
            "postgresql://********@[::1/db"
        );
    }

    #[test]
    fn a_raw_at_sign_in_the_user_info_is_refused_without_echoing_it() {
        let fx = Fixture::new();
        let error = err(fx.resolve_d("postgresql://u:Sup@Sekr3t@host/db")).to_string();
        assert_eq!(
            error,
            "the -d URL \"postgresql://********@host/db\" has more than one \"@\" before its host: \
             libpq splits it at the first one and would take the rest of the user info for a host \
             name\nhint: percent-encode an \"@\" inside a user name or password as %40"
        );
        // Encoded, it is a password like any other.
        let params = ok(fx.resolve_d("postgresql://u:Sup%40Sekr3t@host/db"));
        assert_eq!(
            params.hosts[0].password.as_ref().unwrap().value.expose(),
            "Sup@Sekr3t"
        );
    }

    #[test]
    fn a_mistyped_scheme_is_refused_without_echoing_the_user_info() {
        let fx = Fixture::new();
        let error = err(fx.resolve_d("postgresq://u:Sup@Sekr3t@host/db")).to_string();
        assert_eq!(
            error,
            "-d \"postgresq://********@host/db\" looks like a URL, but \"postgresq://\" is not a scheme \
             libpq knows, so it would be taken for a database name\nhint: start a connection URL with \
             postgresql:// or postgres://"
        );
        assert!(
            !error.contains("Sekr3t") && !error.contains("Sup"),
            "{error}"
        );
        // A database name with "://" but no scheme before it is still a database name.
        assert_eq!(ok(fx.resolve_d("1a://x")).dbname.value, "1a://x");
    }

    #[test]
    fn redacted_round_trips_through_the_parser() {
        let fx = Fixture::new();
        let params = ok(fx.resolve_d("host='a b,c' port=1,2 user=o\\'neil dbname=x options='-c geqo=off' application_name=\\\\"));
        let text = params.redacted();
        let reparsed = pairs(&text);
        assert!(reparsed.contains(&p("host", "a b,c")), "{text}");
        assert!(reparsed.contains(&p("user", "o'neil")), "{text}");
        assert!(reparsed.contains(&p("options", "-c geqo=off")), "{text}");
        assert!(reparsed.contains(&p("application_name", "\\")), "{text}");
    }

    #[test]
    fn explain_sources_names_every_source() {
        let fx = Fixture::new()
            .var("PGSSLMODE", "require")
            .var("PGSERVICE", "s");
        let file = fx.write("home/.pg_service.conf", "[s]\ndbname=svcdb\n", 0o600);
        let params = ok(fx.resolve(&flags(
            Some("h"),
            None,
            None,
            Some("user=u application_name=a"),
        )));
        let rows = params.explain_sources();
        let find = |name: &str| {
            rows.iter()
                .find(|(n, _, _)| n == name)
                .map(|(_, value, source)| (value.clone(), source.clone()))
                .unwrap_or_else(|| panic!("no row {name} in {rows:?}"))
        };
        assert_eq!(
            find("host"),
            ("h".to_string(), "command-line flag".to_string())
        );
        assert_eq!(find("port"), ("5432".to_string(), "default".to_string()));
        assert_eq!(
            find("user"),
            ("u".to_string(), "-d connection string".to_string())
        );
        assert_eq!(
            find("dbname"),
            (
                "svcdb".to_string(),
                format!("service \"s\" ({})", file.display())
            )
        );
        assert_eq!(
            find("sslmode"),
            ("require".to_string(), "environment PGSSLMODE".to_string())
        );
        assert_eq!(find("service").1, "environment PGSERVICE");
        let params = ok(fx.resolve_d("host=a,b"));
        assert!(
            params
                .explain_sources()
                .iter()
                .any(|(n, _, _)| n == "host[2]")
        );
    }
}
