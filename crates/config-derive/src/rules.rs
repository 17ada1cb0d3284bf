//! Validation rules, in garde's syntax and with garde's reports: each rule is a call of the
//! garde rule of the same name, in the order garde's own derive calls them.

use proc_macro2::TokenStream;
use quote::quote;
use syn::meta::ParseNestedMeta;
use syn::{Expr, Ident};

/// The rules of one field, or of the items of a list (`inner`).
#[derive(Default)]
pub(crate) struct Rules {
    /// `custom(f)`: `f(&value, &())` returns `garde::Result`.
    customs: Vec<Expr>,
    /// garde's rules: the rule's module under `garde::rules` and its arguments.
    builtins: Vec<(TokenStream, TokenStream)>,
    /// `inner(...)`: rules for each item.
    inner: Option<Box<Rules>>,
}

/// `min`, `max` and `equal` of `range(...)` or `length(...)`.
#[derive(Default)]
struct Bounds {
    min: Option<Expr>,
    max: Option<Expr>,
    equal: Option<Expr>,
}

fn bounds(meta: &ParseNestedMeta) -> syn::Result<Bounds> {
    let mut b = Bounds::default();
    meta.parse_nested_meta(|m| {
        let value = Some(m.value()?.parse()?);
        if m.path.is_ident("min") {
            b.min = value;
        } else if m.path.is_ident("max") {
            b.max = value;
        } else if m.path.is_ident("equal") {
            b.equal = value;
        } else {
            return Err(m.error("expected min, max or equal"));
        }
        Ok(())
    })?;
    Ok(b)
}

impl Rules {
    pub(crate) fn is_empty(&self) -> bool {
        self.customs.is_empty() && self.builtins.is_empty() && self.inner.is_none()
    }

    /// Reads one rule.
    pub(crate) fn parse(&mut self, meta: ParseNestedMeta) -> syn::Result<()> {
        let name = meta
            .path
            .get_ident()
            .map(Ident::to_string)
            .unwrap_or_default();
        match name.as_str() {
            "custom" => {
                let content;
                syn::parenthesized!(content in meta.input);
                self.customs.push(content.parse()?);
            }
            "ascii" => self.builtins.push((quote!(ascii), quote!(()))),
            "range" => {
                let b = bounds(&meta)?;
                let (min, max) = match b.equal {
                    Some(n) => (quote!(Some(#n)), quote!(Some(#n))),
                    None => {
                        let some = |e: Option<Expr>| e.map_or(quote!(None), |e| quote!(Some(#e)));
                        (some(b.min), some(b.max))
                    }
                };
                self.builtins.push((quote!(range), quote!((#min, #max))));
            }
            "length" => {
                let b = bounds(&meta)?;
                let (min, max) = match b.equal {
                    Some(n) => (quote!(#n), quote!(#n)),
                    None => (
                        b.min.map_or(quote!(0usize), |e| quote!(#e)),
                        b.max.map_or(quote!(usize::MAX), |e| quote!(#e)),
                    ),
                };
                self.builtins
                    .push((quote!(length::simple), quote!((#min, #max))));
            }
            "inner" => {
                if self.inner.is_some() {
                    return Err(meta.error("`inner` twice: put its rules in one"));
                }
                let mut inner = Rules::default();
                meta.parse_nested_meta(|m| {
                    if m.path.is_ident("skip") || m.path.is_ident("dive") {
                        return Err(m.error("items of a list of sections are always validated"));
                    }
                    inner.parse(m)
                })?;
                self.inner = Some(Box::new(inner));
            }
            _ => {
                return Err(meta.error(
                    "unknown #[config] key: default, rename, inline, framework, skip, or a \
                     rule (custom, range, length, ascii, inner)",
                ));
            }
        }
        Ok(())
    }

    /// garde's custom rules, then its built-in ones, reporting at `path()`.
    fn outer(&self, config: &TokenStream) -> TokenStream {
        let customs = self.customs.iter().map(|f| {
            quote! {
                if let ::core::result::Result::Err(__error) = (#f)(&*__value, &()) {
                    __report.append(__path(), __error);
                }
            }
        });
        let builtins = self.builtins.iter().map(|(rule, args)| {
            quote! {
                if let ::core::result::Result::Err(__error) =
                    #config::__private::garde::rules::#rule::apply(&*__value, #args)
                {
                    __report.append(__path(), __error);
                }
            }
        });
        quote!(#(#customs)* #(#builtins)*)
    }

    /// `inner(...)`: the rules for each item, at the item's path.
    fn items(&self, config: &TokenStream) -> TokenStream {
        let Some(inner) = &self.inner else {
            return TokenStream::new();
        };
        let outer = inner.outer(config);
        let items = inner.items(config);
        quote! {
            #config::__private::garde::rules::inner::apply(&*__value, |__value, __key| {
                let mut __path = #config::__private::garde::util::nested_path!(__path, __key);
                #outer
                #items
            });
        }
    }

    /// The statements that validate `__value` (a reference) at `__path`, reporting to
    /// `__report`: the nested section first (unless `skip`), then the items, then the rules
    /// on the whole value, in garde's order.
    pub(crate) fn field(&self, skip: bool, config: &TokenStream) -> TokenStream {
        let dive = (!skip).then(|| {
            quote! {
                {
                    #[allow(unused_imports)]
                    use #config::__private::{DiveInto as _, DiveNone as _};
                    (&#config::__private::Dive(__value)).dive(&mut __path, __report);
                }
            }
        });
        let items = self.items(config);
        let outer = self.outer(config);
        quote!(#dive #items #outer)
    }
}
