//! Request bodies: inline text, a file, form parameters or multipart parts, `${...}` filled in
//! from the user's session. Files are read once, when the run is prepared.

use std::collections::HashMap;
use std::path::Path;

use bytes::Bytes;

use crate::scenario::{Request, Step};
use crate::session::Session;
use crate::template::interpolate;

/// The files the scenario's requests send (`bodyFile`, multipart `file`), by the name the
/// scenario gives them.
#[derive(Default)]
pub struct Files(HashMap<String, File>);

/// A file as read: its bytes, and its text when it holds `${...}` to fill in.
struct File {
    bytes: Bytes,
    template: Option<String>,
}

impl Files {
    /// Reads every file the requests of `steps` name, relative to `base_dir`; a file that
    /// cannot be read, or whose `${...}` is malformed, is an error naming it.
    pub fn load<'a>(
        steps: impl IntoIterator<Item = &'a [Step]>,
        base_dir: &Path,
    ) -> Result<Files, String> {
        fn collect<'a>(steps: &'a [Step], out: &mut Vec<&'a str>) {
            for s in steps {
                if let Some(r) = &s.request {
                    out.extend(r.body_file.as_deref());
                    out.extend(r.multipart.iter().filter_map(|p| p.file.as_deref()));
                }
                for nested in s.nested() {
                    collect(nested, out);
                }
            }
        }
        let mut names = Vec::new();
        for list in steps {
            collect(list, &mut names);
        }
        let mut files = Files::default();
        for name in names {
            if files.0.contains_key(name) {
                continue;
            }
            let path = base_dir.join(name);
            let bytes = std::fs::read(&path)
                .map_err(|e| format!("cannot read the body file {}: {e}", path.display()))?;
            let template = match std::str::from_utf8(&bytes) {
                Ok(text) if text.contains("${") => {
                    crate::template::check(text)
                        .map_err(|e| format!("body file {}: {e}", path.display()))?;
                    Some(text.to_owned())
                }
                _ => None,
            };
            files.0.insert(
                name.to_owned(),
                File {
                    bytes: Bytes::from(bytes),
                    template,
                },
            );
        }
        Ok(files)
    }

    fn get(&self, name: &str, session: &Session) -> Result<Bytes, String> {
        let file = self
            .0
            .get(name)
            .ok_or_else(|| format!("body file {name} was not read"))?;
        match &file.template {
            Some(text) => Ok(Bytes::from(interpolate(text, session)?.into_owned())),
            None => Ok(file.bytes.clone()),
        }
    }

    /// The body of `r` for `session`, and the `Content-Type` it needs: a form's, or a
    /// multipart body's with its boundary; none for a text or a file (the request's
    /// headers say it).
    pub fn body(
        &self,
        r: &Request,
        session: &Session,
    ) -> Result<(Bytes, Option<http::HeaderValue>), String> {
        if let Some(b) = &r.body {
            return Ok((Bytes::from(interpolate(b, session)?.into_owned()), None));
        }
        if let Some(name) = &r.body_file {
            return Ok((self.get(name, session)?, None));
        }
        if !r.form.is_empty() {
            let mut form = form_urlencoded::Serializer::new(String::new());
            for (k, v) in &r.form {
                form.append_pair(k, &interpolate(v, session)?);
            }
            return Ok((
                Bytes::from(form.finish()),
                Some(http::HeaderValue::from_static(
                    "application/x-www-form-urlencoded",
                )),
            ));
        }
        if !r.multipart.is_empty() {
            return self.multipart(r, session);
        }
        Ok((Bytes::new(), None))
    }

    /// `multipart/form-data` (RFC 7578), written here: the encoding is a few lines of
    /// framing, and the crates that write it come with an HTTP client volley does not use.
    fn multipart(
        &self,
        r: &Request,
        session: &Session,
    ) -> Result<(Bytes, Option<http::HeaderValue>), String> {
        let boundary = format!(
            "volley-{:016x}{:016x}",
            fastrand::u64(..),
            fastrand::u64(..)
        );
        let mut body = Vec::new();
        for part in &r.multipart {
            let (content, file_name, default_type) = match (&part.value, &part.file) {
                (Some(v), _) => (
                    Bytes::from(interpolate(v, session)?.into_owned()),
                    None,
                    "text/plain; charset=utf-8",
                ),
                (None, Some(f)) => (
                    self.get(f, session)?,
                    Path::new(f)
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned()),
                    "application/octet-stream",
                ),
                (None, None) => continue,
            };
            let quoted = |s: &str| s.replace('"', "%22").replace(['\r', '\n'], " ");
            body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
            body.extend_from_slice(
                format!(
                    "Content-Disposition: form-data; name=\"{}\"",
                    quoted(&part.name)
                )
                .as_bytes(),
            );
            if let Some(f) = file_name {
                body.extend_from_slice(format!("; filename=\"{}\"", quoted(&f)).as_bytes());
            }
            let content_type = part.content_type.as_deref().unwrap_or(default_type);
            body.extend_from_slice(format!("\r\nContent-Type: {content_type}\r\n\r\n").as_bytes());
            body.extend_from_slice(&content);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
        let header =
            http::HeaderValue::from_str(&format!("multipart/form-data; boundary={boundary}"))
                .map_err(|e| format!("multipart: {e}"))?;
        Ok((Bytes::from(body), Some(header)))
    }
}
