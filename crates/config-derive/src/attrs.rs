//! The `#[config(...)]` attributes, read into plain values.

use syn::meta::ParseNestedMeta;
use syn::{Attribute, Expr, LitStr, Path};

use crate::rules::Rules;

/// `#[config(...)]` on the struct or enum.
#[derive(Default)]
pub(crate) struct Container {
    /// `crate = path`: where ferrowizard-config is, for crates below ferrowizard.
    pub(crate) krate: Option<Path>,
    /// `check = path`: a rule over several keys, `fn(&Self) -> Result<(), Invalid>`.
    pub(crate) check: Option<Expr>,
    /// `rename_all = "..."`: how an enum's variants are spelled (camelCase by default).
    pub(crate) rename_all: Option<Case>,
    /// `refuse(key = "why", ...)`: keys other tools accept, refused with why.
    pub(crate) refuse: Vec<(String, LitStr)>,
}

/// How variant names are spelled in the file.
#[derive(Clone, Copy)]
pub(crate) enum Case {
    Camel,
    Lower,
    Kebab,
}

impl Case {
    /// `name` (a Rust `PascalCase` or `snake_case` name) spelled this way.
    pub(crate) fn apply(self, name: &str) -> String {
        let name = name.strip_prefix("r#").unwrap_or(name);
        match self {
            Case::Lower => name.replace('_', "").to_lowercase(),
            Case::Camel => {
                let mut out = String::new();
                let mut upper = false;
                for (i, c) in name.chars().enumerate() {
                    if c == '_' {
                        upper = true;
                    } else if i == 0 {
                        out.extend(c.to_lowercase());
                    } else if upper {
                        out.extend(c.to_uppercase());
                        upper = false;
                    } else {
                        out.push(c);
                    }
                }
                out
            }
            Case::Kebab => {
                let mut out = String::new();
                for (i, c) in name.chars().enumerate() {
                    if c.is_uppercase() && i > 0 {
                        out.push('-');
                    }
                    if c == '_' {
                        out.push('-');
                    } else {
                        out.extend(c.to_lowercase());
                    }
                }
                out
            }
        }
    }
}

/// `#[config(...)]` on a field.
#[derive(Default)]
pub(crate) struct Field {
    /// `default = expr`; unset: `Default::default()`.
    pub(crate) default: Option<Expr>,
    /// `rename = "key"`: the key in the file, in place of the camelCase name.
    pub(crate) rename: Option<String>,
    /// `inline`: the field's own keys are written beside this section's.
    pub(crate) inline: bool,
    /// `framework`: ferrowizard's sections, inlined; the type implements `Configuration`.
    pub(crate) framework: bool,
    /// `skip`: not validated, even when its type is a section.
    pub(crate) skip: bool,
    /// The validation rules.
    pub(crate) rules: Rules,
}

/// `#[config(...)]` on an enum variant.
#[derive(Default)]
pub(crate) struct Variant {
    /// `rename = "name"`.
    pub(crate) rename: Option<String>,
}

fn each(
    attrs: &[Attribute],
    mut f: impl FnMut(ParseNestedMeta) -> syn::Result<()>,
) -> syn::Result<()> {
    for attr in attrs {
        if attr.path().is_ident("config") {
            attr.parse_nested_meta(&mut f)?;
        } else if attr.path().is_ident("garde") || attr.path().is_ident("serde") {
            return Err(syn::Error::new_spanned(
                attr,
                "#[derive(Config)] reads #[config(...)]: write the rules and renames there, \
                 e.g. #[config(range(min = 1))] or #[config(rename = \"type\")]",
            ));
        }
    }
    Ok(())
}

pub(crate) fn container(attrs: &[Attribute]) -> syn::Result<Container> {
    let mut out = Container::default();
    each(attrs, |meta| {
        if meta.path.is_ident("crate") {
            out.krate = Some(meta.value()?.parse()?);
        } else if meta.path.is_ident("check") {
            out.check = Some(meta.value()?.parse()?);
        } else if meta.path.is_ident("rename_all") {
            let lit: LitStr = meta.value()?.parse()?;
            out.rename_all = Some(match lit.value().as_str() {
                "camelCase" => Case::Camel,
                "lowercase" => Case::Lower,
                "kebab-case" => Case::Kebab,
                _ => {
                    return Err(syn::Error::new_spanned(
                        lit,
                        "rename_all is one of \"camelCase\", \"lowercase\", \"kebab-case\"",
                    ));
                }
            });
        } else if meta.path.is_ident("refuse") {
            meta.parse_nested_meta(|key| {
                let name = key
                    .path
                    .get_ident()
                    .map(ToString::to_string)
                    .ok_or_else(|| key.error("refuse(key = \"why\"): the key as written"))?;
                out.refuse.push((name, key.value()?.parse()?));
                Ok(())
            })?;
        } else {
            return Err(
                meta.error("unknown #[config] key here: crate, check, rename_all or refuse")
            );
        }
        Ok(())
    })?;
    Ok(out)
}

pub(crate) fn field(attrs: &[Attribute]) -> syn::Result<Field> {
    let mut out = Field::default();
    each(attrs, |meta| {
        if meta.path.is_ident("default") {
            out.default = Some(meta.value()?.parse()?);
        } else if meta.path.is_ident("rename") {
            out.rename = Some(meta.value()?.parse::<LitStr>()?.value());
        } else if meta.path.is_ident("inline") {
            out.inline = true;
        } else if meta.path.is_ident("framework") {
            out.framework = true;
            out.inline = true;
        } else if meta.path.is_ident("skip") {
            out.skip = true;
        } else if meta.path.is_ident("dive") {
            return Err(meta.error(
                "a nested section is always validated: remove `dive` (or write `skip` to \
                 not validate it)",
            ));
        } else {
            out.rules.parse(meta)?;
        }
        Ok(())
    })?;
    if out.skip && !out.rules.is_empty() {
        return Err(syn::Error::new_spanned(
            &attrs[0],
            "`skip` and rules on one field: keep one",
        ));
    }
    if out.inline && (!out.rules.is_empty() || out.default.is_some() || out.rename.is_some()) {
        return Err(syn::Error::new_spanned(
            &attrs[0],
            "an inline field's keys are its type's own: it takes no default, rename or rules",
        ));
    }
    Ok(out)
}

pub(crate) fn variant(attrs: &[Attribute]) -> syn::Result<Variant> {
    let mut out = Variant::default();
    each(attrs, |meta| {
        if meta.path.is_ident("rename") {
            out.rename = Some(meta.value()?.parse::<LitStr>()?.value());
            Ok(())
        } else {
            Err(meta.error("unknown #[config] key on a variant: rename"))
        }
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::Case;

    #[test]
    fn names_are_spelled_as_serde_spells_them() {
        for (case, rust, file) in [
            (Case::Camel, "current_log_filename", "currentLogFilename"),
            (Case::Camel, "r#type", "type"),
            (Case::Camel, "TlsV12", "tlsV12"),
            (Case::Camel, "RemoteAddress", "remoteAddress"),
            (Case::Lower, "Local0", "local0"),
            (Case::Lower, "AccessJson", "accessjson"),
            (Case::Kebab, "AccessJson", "access-json"),
            (Case::Kebab, "UdpRelay", "udp-relay"),
            (Case::Kebab, "Json", "json"),
        ] {
            assert_eq!(case.apply(rust), file, "{rust}");
        }
    }
}
