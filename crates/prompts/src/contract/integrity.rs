//! Integrity: duplicate ids, unplaceable particles, and a deletion racing a placement.

use super::*;

/// Duplicate ids conflict, and an insert whose placements or first version cannot be stored
/// stores nothing.
pub async fn duplicate_ids_conflict_and_change_nothing(stores: &impl PromptStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let owner = org(&acme);
    let p = f.particle(&owner, "role", Category::Role, at(0)).await;
    assert!(is_conflict(f.particles.insert(&p, &[]).await));
    let (prompt, _) = f.prompt(&owner, "prompt", at(0), &[]).await;
    assert!(is_conflict(f.prompts.insert(&prompt, &[], &[]).await));

    // A prompt whose placements cannot be stored is not stored either.
    let fresh = self::prompt(&owner, "fresh", at(1));
    let placement = association(&fresh, &p, 0, None, at(1));
    assert!(is_conflict(
        f.prompts
            .insert(&fresh, &[placement.clone(), placement], &[])
            .await
    ));
    assert_eq!(f.prompts.get(&acme, &fresh.id).await.unwrap(), None);

    // A particle whose first version cannot be stored is not stored either.
    let mut broken = particle(&owner, "broken", Category::Role, at(1));
    broken.latest.id = p.latest.id.clone();
    assert!(is_conflict(f.particles.insert(&broken, &[]).await));
    assert_eq!(f.particles.get(&acme, &broken.id).await.unwrap(), None);
}

/// Deleted particles, another organization's, an organization's in a system prompt, and a
/// pin to another particle's version cannot be placed.
pub async fn deleted_and_foreign_particles_cannot_be_placed(stores: &impl PromptStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let owner = org(&acme);
    let gone = f.particle(&owner, "gone", Category::Role, at(0)).await;
    assert_eq!(
        f.particles
            .delete(&owner, &gone.id, at(1), &[])
            .await
            .unwrap(),
        ParticleDeletion::Deleted
    );
    let foreign = f
        .particle(&org(&globex), "foreign", Category::Role, at(0))
        .await;
    let own = f.particle(&owner, "own", Category::Role, at(0)).await;
    let (mut prompt, _) = f.prompt(&owner, "prompt", at(2), &[]).await;

    for particle in [&gone, &foreign] {
        let placement = association(&prompt, particle, 0, None, at(3));
        assert!(is_conflict(
            f.prompts
                .add_association(&owner, &placement, &[])
                .await
                .map(drop)
        ));
        let fresh = self::prompt(&owner, "fresh", at(3));
        let placement = association(&fresh, particle, 0, None, at(3));
        assert!(is_conflict(
            f.prompts.insert(&fresh, &[placement], &[]).await
        ));
        assert_eq!(f.prompts.get(&acme, &fresh.id).await.unwrap(), None);
    }
    // A system prompt places system particles only.
    let profile = self::prompt(&Owner::System, "profile", at(3));
    let placement = association(&profile, &own, 0, None, at(3));
    assert!(is_conflict(
        f.prompts.insert(&profile, &[placement], &[]).await
    ));
    // A pin names a version of the placed particle.
    let placement = association(&prompt, &own, 0, Some(&foreign.latest), at(3));
    assert!(
        f.prompts
            .add_association(&owner, &placement, &[])
            .await
            .is_err()
    );

    assert!(f.layout(&prompt.id, None).await.is_empty());
    assert_eq!(
        f.prompts.get(&acme, &prompt.id).await.unwrap(),
        Some(prompt.clone())
    );
    let placement = association(&prompt, &own, 0, Some(&own.latest), at(4));
    assert!(
        f.prompts
            .add_association(&owner, &placement, &[])
            .await
            .unwrap()
    );
    prompt.updated_at = at(4);
    assert_eq!(
        f.prompts.get(&acme, &prompt.id).await.unwrap(),
        Some(prompt)
    );
}

/// A particle's deletion racing its placement: exactly one of them succeeds.
pub async fn deletion_and_placement_race_safely(stores: &impl PromptStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let owner = org(&acme);
    let (prompt, _) = f.prompt(&owner, "prompt", at(0), &[]).await;
    for round in 0..10 {
        let p = f
            .particle(&owner, &format!("p{round}"), Category::Role, at(1))
            .await;
        let placement = association(&prompt, &p, round, None, at(2) + micros(round.into()));
        let (placed, deleted) = tokio::join!(
            tokio::spawn({
                let prompts = f.prompts.clone();
                let owner = owner.clone();
                async move { prompts.add_association(&owner, &placement, &[]).await }
            }),
            tokio::spawn({
                let particles = f.particles.clone();
                let (owner, id) = (owner.clone(), p.id.clone());
                async move { particles.delete(&owner, &id, at(3), &[]).await.unwrap() }
            }),
        );
        let placed = matches!(placed.unwrap(), Ok(true));
        let deleted = deleted.unwrap() == ParticleDeletion::Deleted;
        assert!(
            placed != deleted,
            "round {round}: placed {placed}, deleted {deleted}"
        );
        let current = f
            .layout(&prompt.id, None)
            .await
            .into_iter()
            .any(|e| e.particle == p.id);
        assert_eq!(current, placed);
    }
}
