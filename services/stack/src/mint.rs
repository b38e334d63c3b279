//! `chess-stack mint-assertion`: a caller assertion signed with a stack's
//! internal key, for calling an internal service by hand.

use crate::{config::MintArgs, data_dir::INTERNAL_KEY_FILE};

/// The assertion `args` asks for, or why there is none.
pub(crate) fn mint_assertion(args: &MintArgs) -> Result<String, String> {
    let path = args
        .internal_key_file
        .clone()
        .unwrap_or_else(|| args.data_dir.join(INTERNAL_KEY_FILE));
    let key = chess_runtime::InternalKey::read(&path).map_err(|e| e.to_string())?;
    chess_runtime::Signer::new(key, &args.caller)
        .mint(Some(&args.player), Some(&args.game))
        .map_err(|status| status.message().to_owned())
}
