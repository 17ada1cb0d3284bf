//! The paths the generated code names: the user's crate reaches ferrowizard-config through
//! ferrowizard when it depends on ferrowizard, and directly otherwise.

use proc_macro_crate::{FoundCrate, crate_name};
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::Ident;

/// Where the support code is, and where ferrowizard is (for `#[config(framework)]`).
pub(crate) struct Paths {
    /// `ferrowizard_config`, however the user's crate reaches it.
    pub(crate) config: TokenStream,
    /// `ferrowizard`, when the user's crate depends on it.
    pub(crate) toolkit: Option<TokenStream>,
}

fn found(found: FoundCrate, own: &str) -> TokenStream {
    // A crate's own name resolves through its `extern crate self as <name>;`, which also
    // holds in its doctests and test targets, where `crate` is another crate.
    let name = match found {
        FoundCrate::Itself => own.to_owned(),
        FoundCrate::Name(name) => name,
    };
    let ident = Ident::new(&name, Span::call_site());
    quote!(::#ident)
}

/// The paths for the crate being compiled; `explicit` is `#[config(crate = path)]`.
pub(crate) fn paths(explicit: Option<&syn::Path>) -> syn::Result<Paths> {
    let toolkit = crate_name("ferrowizard")
        .ok()
        .map(|f| found(f, "ferrowizard"));
    if let Some(path) = explicit {
        return Ok(Paths {
            config: quote!(#path),
            toolkit,
        });
    }
    if let Some(toolkit) = toolkit {
        return Ok(Paths {
            config: quote!(#toolkit::__private::config),
            toolkit: Some(toolkit),
        });
    }
    match crate_name("ferrowizard-config") {
        Ok(f) => Ok(Paths {
            config: found(f, "ferrowizard_config"),
            toolkit: None,
        }),
        Err(_) => Err(syn::Error::new(
            Span::call_site(),
            "#[derive(Config)] needs `ferrowizard` (or `ferrowizard-config`) in [dependencies]",
        )),
    }
}
